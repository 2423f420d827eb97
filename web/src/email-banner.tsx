// Email readiness: whether the server sends email (`GET /workspace/email-readiness`) and, for
// the people who run the workspace (owners and admins), a banner when it does not while
// something needs it: subscribers, EMAIL channels, pending invitations, published pages.
import { signal } from '@preact/signals';
import { api, call, type Schemas } from './api/client';

export const emailReadiness = signal<Schemas['EmailReadiness'] | null>(null);

/** Reads it again (after a session starts, and on each move between screens). */
export async function loadEmailReadiness() {
  emailReadiness.value = await call(api.GET('/workspace/email-readiness')).catch(() => emailReadiness.value);
}

function plural(n: number, one: string, many: string) {
  return `${n} ${n === 1 ? one : many}`;
}

export function EmailBanner({ role }: { role: string | undefined }) {
  const r = emailReadiness.value;
  if (!r || r.smtpConfigured || (role !== 'owner' && role !== 'admin')) return null;
  const needs: string[] = [];
  if (r.subscribers) needs.push(`${plural(r.subscribers, 'subscriber', 'subscribers')} of your status pages get no confirmation or news.`);
  if (r.emailChannels) needs.push(`${plural(r.emailChannels, 'EMAIL channel sends', 'EMAIL channels send')} nothing.`);
  if (r.pendingInvitations) {
    needs.push(`${plural(r.pendingInvitations, 'pending invitation was', 'pending invitations were')} not emailed: pass the accept link on yourself.`);
  }
  if (r.publishedStatusPages) {
    needs.push(`Readers of your ${plural(r.publishedStatusPages, 'published status page', 'published status pages')} cannot subscribe by email.`);
  }
  if (!needs.length) return null;
  return (
    <section class="notice email-banner" aria-label="Email is not set up">
      <p>
        <strong>This server sends no email:</strong> it has no SMTP relay. Ask its operator to start it with{' '}
        <code>--smtp-url</code> and <code>--smtp-from</code>.
      </p>
      <ul>
        {needs.map((n) => (
          <li>{n}</li>
        ))}
      </ul>
    </section>
  );
}

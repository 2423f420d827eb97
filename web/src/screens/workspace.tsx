// The workspace: its members (role, and how each signs in: password or a single sign-on
// provider, named from `GET /auth/sso/providers`), invitations (send, revoke; the accept link
// is shown when no email could be sent), and the audit log with action and resource filters.
// Invitations are for owners and admins, and the audit log for every role but member
// (role.ts): a screen that could only show refusals is left out.
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canAdminister, canReadAudit } from '../role';
import { loadProviders, signInMethods } from '../sso';
import { ErrorNote, Field, useLoad } from '../ui';

type Role = Schemas['Role'];
const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer'];

export function Workspace() {
  const admin = canAdminister();
  const members = useLoad(() => call(api.GET('/workspace/members')), []);
  const providers = useLoad(loadProviders, []);
  const invitations = useLoad(() => (admin ? call(api.GET('/workspace/invitations')) : Promise.resolve(undefined)), [admin]);
  const [error, setError] = useState<unknown>(null);
  const [link, setLink] = useState<string | null>(null);

  const invite = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    setError(null);
    setLink(null);
    try {
      const inv = await call(api.POST('/workspace/invitations', { body: { email: String(f.get('email')), role: String(f.get('role')) as Role } }));
      if (!inv.emailed && inv.acceptUrl) setLink(inv.acceptUrl);
      form.reset();
      invitations.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = async (id: string) => {
    try {
      await call(api.POST('/workspace/invitations/{invitation_id}/revoke', { params: { path: { invitation_id: id } } }));
      invitations.reload();
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const pending = (invitations.data?.invitations ?? []).filter((i) => i.status === 'pending');

  return (
    <main id="main">
      <h1>Workspace</h1>
      <ErrorNote error={members.error} />
      <section aria-labelledby="mem-h">
        <h2 id="mem-h">Members</h2>
        <div class="table-wrap">
          <table>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Signs in with</th><th scope="col">Joined</th></tr>
            </thead>
            <tbody>
              {(members.data?.members ?? []).map((m) => (
                <tr data-member-id={m.userId}>
                  <td>{m.name}</td>
                  <td>{m.email}</td>
                  <td>{m.role}</td>
                  <td data-testid="sign-in-methods">{signInMethods(m.signInMethods ?? [], providers.data ?? [])}</td>
                  <td>{when(m.joinedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
      {admin && (
        <section aria-labelledby="inv-h">
          <h2 id="inv-h">Invitations</h2>
          {pending.length === 0 ? <p>No pending invitations.</p> : (
            <ul class="plain">
              {pending.map((i) => (
                <li>{i.email} · {i.role} · expires {when(i.expiresAt)}{' '}
                  <button type="button" class="link" onClick={() => revoke(i.id)} aria-label={`Revoke invitation of ${i.email}`}>Revoke</button>
                </li>
              ))}
            </ul>
          )}
          <form class="inline-form" onSubmit={invite}>
            <ErrorNote error={error} />
            <Field label="Email" id="inv-email" error={fe('email')}>
              <input id="inv-email" name="email" type="email" required />
            </Field>
            <Field label="Role" id="inv-role" error={fe('role')}>
              <select id="inv-role" name="role">
                {ROLES.filter((r) => r !== 'owner').map((r) => <option value={r} selected={r === 'member'}>{r}</option>)}
              </select>
            </Field>
            <button type="submit">Invite</button>
          </form>
          {link && <p class="notice" role="status">No email could be sent; share this link: <code>{link}</code></p>}
        </section>
      )}
      {canReadAudit() && <AuditLog />}
    </main>
  );
}

function AuditLog() {
  const [action, setAction] = useState('');
  const [resource, setResource] = useState('');
  const log = useLoad(
    () => call(api.GET('/audit-log', { params: { query: { action: action || undefined, resourceType: resource || undefined, limit: 100 } } })),
    [action, resource],
  );
  return (
    <section aria-labelledby="audit-h">
      <h2 id="audit-h">Audit log</h2>
      <div class="inline-form">
        <Field label="Action" id="a-action" hint="e.g. monitor.created">
          <input id="a-action" value={action} onChange={(e) => setAction((e.target as HTMLInputElement).value.trim())} />
        </Field>
        <Field label="Resource type" id="a-resource" hint="e.g. monitor">
          <input id="a-resource" value={resource} onChange={(e) => setResource((e.target as HTMLInputElement).value.trim())} />
        </Field>
      </div>
      <ErrorNote error={log.error} />
      {log.data && (
        <div class="table-wrap">
          <table>
            <caption>{log.data.total} entries</caption>
            <thead><tr><th scope="col">Time</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Resource</th></tr></thead>
            <tbody>
              {log.data.entries.map((e) => (
                <tr><td>{when(e.createdAt)}</td><td>{e.actorEmail ?? e.userId}</td><td>{e.action}</td><td class="muted">{e.resourceType} {e.resourceId}</td></tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

// The "confirm your email" banner: a person who signed up with a password has not yet shown
// that the address is theirs, so email-domain status pages and invitations addressed to it
// stay closed to them until they follow the emailed link. One button asks for a new link.
import { useState } from 'preact/hooks';
import { authPost } from './api/client';
import { ErrorNote } from './ui';

export function VerifyEmailBanner({ email }: { email: string }) {
  const [sent, setSent] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const resend = async () => {
    setBusy(true);
    setError(null);
    try {
      await authPost('/auth/verify-email/resend', {});
      setSent(true);
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  return (
    <section class="notice verify-email" aria-label="Email confirmation">
      <p>
        Confirm your email address: follow the link sent to <strong>{email}</strong>. Until then, status pages
        restricted to email domains and invitations to this address stay closed to you.
      </p>
      {sent ? (
        <p role="status">A new link is on its way.</p>
      ) : (
        <button type="button" class="link" disabled={busy} onClick={resend}>
          Send the link again
        </button>
      )}
      <ErrorNote error={error} />
    </section>
  );
}

// The invitation accept page (`/app/invitations/accept?token=`), the link an invitation email
// carries: signed in, one button joins the workspace and switches to it.
import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { refreshSession } from '../app';
import { navigate, query } from '../router';
import { ErrorNote } from '../ui';

export function AcceptInvitation() {
  const token = query('token');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const join = async () => {
    if (!token) return;
    setBusy(true);
    try {
      await call(api.POST('/invitations/accept', { body: { token } }));
      await refreshSession();
      navigate('/', true);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <main id="main" class="auth">
      <h1>Join a workspace</h1>
      <div class="card">
        {token ? <p>You have been invited to a Tocsin workspace.</p> : <p>This link has no invitation in it. Ask for a new one.</p>}
        <ErrorNote error={error} />
        <button type="button" class="primary" disabled={!token || busy} onClick={join}>
          Join the workspace
        </button>
      </div>
    </main>
  );
}

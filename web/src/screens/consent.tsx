// The OAuth consent page (`/app/oauth/consent?consent_code=&client_id=&scope=`): the client
// asking, the scopes it asks for (each can be unticked), then `POST /auth/oauth2/consent` and
// on to the `redirectURI` the server answers. The server never grants beyond the person's
// role, so a viewer is shown the writes asked for as not grantable rather than ticked and
// silently dropped (role.ts).
import { useState } from 'preact/hooks';
import { authPost } from '../api/client';
import { canWrite } from '../role';
import { query } from '../router';
import { ErrorNote } from '../ui';

export function Consent() {
  const code = query('consent_code');
  const client = query('client_id') ?? 'An application';
  const asked = (query('scope') ?? '').split(/[\s+]+/).filter(Boolean);
  const holds = (s: string) => canWrite() || s.endsWith(':read');
  const [kept, setKept] = useState<Set<string>>(() => new Set(asked.filter(holds)));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const answer = async (accept: boolean) => {
    setBusy(true);
    try {
      const body: Record<string, unknown> = { consent_code: code, accept };
      // Scopes the person unticked are left out of the grant.
      if (accept && kept.size !== asked.length) body.scope = [...kept].join(' ');
      const res = await authPost<{ redirectURI: string }>('/auth/oauth2/consent', body);
      location.assign(res.redirectURI);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };

  if (!code) {
    return (
      <main id="main" class="auth">
        <h1>Nothing to approve</h1>
        <p>This page is opened by an application asking for access. Start again from the application.</p>
      </main>
    );
  }
  return (
    <main id="main" class="auth">
      <h1>Allow access?</h1>
      <form class="card" onSubmit={(e) => { e.preventDefault(); answer(true); }}>
        <p>
          <strong>{client}</strong> asks to use your Tocsin workspace with these capabilities:
        </p>
        <ErrorNote error={error} />
        <fieldset class="caps">
          <legend>Capabilities to grant</legend>
          {asked.map((s) => (
            <label class="check">
              <input
                type="checkbox"
                disabled={!holds(s)}
                checked={kept.has(s)}
                onChange={(e) => {
                  const next = new Set(kept);
                  if ((e.target as HTMLInputElement).checked) next.add(s);
                  else next.delete(s);
                  setKept(next);
                }}
              />
              {s}
            </label>
          ))}
        </fieldset>
        {asked.some((s) => !holds(s)) && (
          <p class="hint">As a viewer of this workspace you can grant reads only: the other capabilities are left out.</p>
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || kept.size === 0}>Allow</button>
          <button type="button" disabled={busy} onClick={() => answer(false)}>Deny</button>
        </div>
      </form>
    </main>
  );
}

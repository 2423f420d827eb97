// API keys: mint with a capability picker and its presets (read only, monitors and alerts,
// everything) (the secret is shown once, with a copy button),
// rotate (a new secret, shown once) and revoke. Keys are the person's own, so a viewer mints
// them too, but is offered only the reads they hold (role.ts): the server refuses a key
// above its maker's role.
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canWrite } from '../role';
import { copy, Empty, ErrorNote, Field, useLoad } from '../ui';

type Cap = Schemas['TokenCapability'];
const CAPS: Cap[] = [
  'monitors:read', 'monitors:write', 'monitors:delete',
  'status_pages:read', 'status_pages:write', 'status_pages:delete',
  'incidents:read', 'incidents:write', 'incidents:delete',
  'postmortems:read', 'postmortems:write', 'postmortems:delete',
  'notifications:read', 'notifications:write', 'notifications:delete',
  'maintenance:write', 'identity:read',
];

/** Common sets of capabilities, one click each instead of ticking them one by one. */
const PRESETS: { name: string; caps: Cap[] }[] = [
  { name: 'Read only', caps: CAPS.filter((c) => c.endsWith(':read')) },
  {
    name: 'Monitors and alerts',
    caps: ['monitors:read', 'monitors:write', 'monitors:delete', 'notifications:read', 'notifications:write', 'maintenance:write', 'identity:read'],
  },
  { name: 'Everything', caps: CAPS },
];

const same = (a: Set<Cap>, b: Cap[]) => a.size === b.length && b.every((c) => a.has(c));

function Secret({ issued, onDone }: { issued: Schemas['IssuedApiKey']; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <section class="card secret-box" aria-labelledby="secret-h">
      <h2 id="secret-h">Your new key “{issued.name}”</h2>
      <p>Copy it now: it is shown only this once.</p>
      <p class="secret">
        <code data-testid="new-secret">{issued.token}</code>{' '}
        <button type="button" onClick={async () => setCopied(await copy(issued.token))}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </p>
      <button type="button" onClick={onDone}>Done</button>
    </section>
  );
}

export function ApiKeys() {
  const keys = useLoad(() => call(api.GET('/api-keys')), []);
  const caps = canWrite() ? CAPS : CAPS.filter((c) => c.endsWith(':read'));
  const presets = PRESETS.filter((p) => p.caps.every((c) => caps.includes(c)));
  const [issued, setIssued] = useState<Schemas['IssuedApiKey'] | null>(null);
  const [picked, setPicked] = useState<Set<Cap>>(new Set(['monitors:read']));
  const [mcp, setMcp] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const mint = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const name = String(new FormData(form).get('name') ?? '');
    setError(null);
    try {
      const k = await call(
        api.POST('/api-keys', { body: { name, permissions: [...picked], surfaces: mcp ? ['rest', 'mcp'] : ['rest'] } }),
      );
      setIssued(k);
      form.reset();
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const act = async (id: string, what: 'rotate' | 'revoke') => {
    setError(null);
    try {
      if (what === 'rotate') {
        setIssued(await call(api.POST('/api-keys/{key_id}/rotate', { params: { path: { key_id: id } } })));
      } else {
        await call(api.POST('/api-keys/{key_id}/revoke', { params: { path: { key_id: id } } }));
      }
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const active = (keys.data ?? []).filter((k) => k.status === 'ACTIVE');
  const revoked = (keys.data ?? []).filter((k) => k.status !== 'ACTIVE');

  return (
    <main id="main">
      <h1>API keys</h1>
      <p class="muted">Keys let scripts and AI assistants use the API with the capabilities you pick.</p>
      {issued && <Secret issued={issued} onDone={() => setIssued(null)} />}
      <ErrorNote error={error ?? keys.error} />
      <form class="card form" onSubmit={mint}>
        <h2>Mint a key</h2>
        <Field label="Name" id="k-name" error={fe('name')}>
          <input id="k-name" name="name" required maxLength={100} placeholder="deploy script" />
        </Field>
        <fieldset class="caps">
          <legend>Capabilities</legend>
          <div class="presets" role="group" aria-label="Presets">
            <span class="muted">Presets:</span>
            {presets.map((p) => (
              <button type="button" aria-pressed={same(picked, p.caps)} onClick={() => setPicked(new Set(p.caps))}>
                {p.name}
              </button>
            ))}
          </div>
          {fe('permissions') && <small class="error" role="alert">{fe('permissions')}</small>}
          {caps.map((c) => (
            <label class="check">
              <input
                type="checkbox"
                name="cap"
                value={c}
                checked={picked.has(c)}
                onChange={(e) => {
                  const next = new Set(picked);
                  if ((e.target as HTMLInputElement).checked) next.add(c);
                  else next.delete(c);
                  setPicked(next);
                }}
              />
              {c}
            </label>
          ))}
        </fieldset>
        <label class="check">
          <input type="checkbox" checked={mcp} onChange={(e) => setMcp((e.target as HTMLInputElement).checked)} /> Also usable on MCP
        </label>
        <button type="submit" class="primary">Mint key</button>
      </form>
      {keys.data && keys.data.length === 0 && (
        <Empty title="No keys yet"><p>Mint one above to call the API from a script.</p></Empty>
      )}
      {active.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>Active keys</caption>
            <thead>
              <tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Capabilities</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {active.map((k) => (
                <tr data-key-id={k.id}>
                  <td>{k.name}</td>
                  <td><code>{k.tokenHint}</code></td>
                  <td class="muted">{k.permissions.join(', ')}</td>
                  <td>{when(k.lastUsedAt)}</td>
                  <td class="actions">
                    <button type="button" onClick={() => act(k.id, 'rotate')} aria-label={`Rotate ${k.name}`}>Rotate</button>
                    <button type="button" class="danger" onClick={() => act(k.id, 'revoke')} aria-label={`Revoke ${k.name}`}>Revoke</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {revoked.length > 0 && (
        <details>
          <summary>Revoked keys ({revoked.length})</summary>
          <ul>
            {revoked.map((k) => <li data-key-id={k.id}>{k.name} <code>{k.tokenHint}</code> — revoked</li>)}
          </ul>
        </details>
      )}
    </main>
  );
}

// A status page's publishable keys (list, mint, revoke; a new key is shown once with a copy
// button) and the snippets that embed the page elsewhere: the widget script
// (`/embed/widget.js`), the SVG badges (`/api/v1/embed/badge.svg`) and an iframe of the
// public page, filled in with the new key when there is one. A viewer reads the keys and the
// snippets (copy buttons and all) but mints and revokes nothing (role.ts).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canWrite } from '../role';
import { copy, Empty, ErrorNote, Field, useLoad } from '../ui';
import { SectionHead, usePage } from './status-page-admin';

function CopyButton({ text, what }: { text: string; what: string }) {
  const [state, setState] = useState<'' | 'copied' | 'failed'>('');
  return (
    <button type="button" aria-label={`Copy ${what}`} onClick={async () => setState((await copy(text)) ? 'copied' : 'failed')}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select it' : 'Copy'}
    </button>
  );
}

function Snippet({ id, title, text, children }: { id: string; title: string; text: string; children?: ComponentChildren }) {
  return (
    <div class="snippet">
      <div class="title-row">
        <h3 id={id}>{title}</h3>
        <CopyButton text={text} what={title.toLowerCase()} />
      </div>
      {children}
      <pre><code data-testid={`${id}-code`}>{text}</code></pre>
    </div>
  );
}

export function Embed({ id }: { id: string }) {
  const { loaded, error: loadError } = usePage(id);
  const keys = useLoad(() => call(api.GET('/status-pages/{page_id}/publishable-keys', { params: { path: { page_id: id } } })), [id]);
  const [fresh, setFresh] = useState<Schemas['CreatedPublishableKey'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const [components, setComponents] = useState(false);
  const [uptime, setUptime] = useState('30d');
  const [style, setStyle] = useState('flat');
  const path = { page_id: id };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);

  const mint = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    setError(null);
    try {
      const k = await call(api.POST('/status-pages/{page_id}/publishable-keys', { params: { path }, body: { name: String(new FormData(form).get('name')) } }));
      setFresh(k);
      form.reset();
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = async (k: Schemas['PublishableKey']) => {
    setError(null);
    try {
      await call(api.DELETE('/status-pages/{page_id}/publishable-keys/{key_id}', { params: { path: { page_id: id, key_id: k.id } } }));
      if (fresh?.id === k.id) setFresh(null);
      setConfirm(null);
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };

  const page = loaded?.page;
  const origin = page ? new URL(page.url, location.origin).origin : location.origin;
  const key = fresh?.key ?? 'pk_...';
  const name = page?.name ?? 'Status';
  const widget = `<script src="${origin}/embed/widget.js" data-key="${key}"${components ? ' data-components="true"' : ''} async></script>`;
  const styleQ = style === 'flat' ? '' : `&style=${style}`;
  const statusBadge = `${origin}/api/v1/embed/badge.svg?token=${key}${styleQ}`;
  const uptimeBadge = `${origin}/api/v1/embed/badge.svg?token=${key}&uptime=${uptime}${styleQ}`;
  const iframe = page ? `<iframe src="${page.url}" title="${name} status" width="100%" height="600" loading="lazy"></iframe>` : '';
  // The dashboard's CSP loads images from this site only: the badge is shown when it is here.
  const showBadge = !!fresh && !!page?.published && origin === location.origin;
  const writer = canWrite();

  return (
    <main id="main">
      <SectionHead id={id} page={page} title="Embed" error={loadError ?? keys.error} />
      {fresh && (
        <section class="card secret-box" aria-labelledby="pk-new-h">
          <h2 id="pk-new-h">Your new publishable key “{fresh.name}”</h2>
          <p>Copy it now: it is shown only this once. It can only read this page, so it is safe in a web page's code.</p>
          <p class="secret">
            <code data-testid="new-publishable-key">{fresh.key}</code> <CopyButton text={fresh.key} what="the new key" />
          </p>
          <button type="button" onClick={() => setFresh(null)}>Done</button>
        </section>
      )}
      <ErrorNote error={error} />
      <section aria-labelledby="pk-h">
        <h2 id="pk-h">Publishable keys</h2>
        {keys.data && keys.data.length === 0 && (
          <Empty title="No publishable keys yet">
            <p>
              {writer
                ? "Mint one below to show this page's status on another site with the widget or a badge."
                : "A key shows this page's status on another site with the widget or a badge."}
            </p>
          </Empty>
        )}
        {keys.data && keys.data.length > 0 && (
          <div class="table-wrap">
            <table>
              <caption>Keys that read this page</caption>
              <thead>
                <tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th>{writer && <th scope="col"><span class="sr-only">Actions</span></th>}</tr>
              </thead>
              <tbody>
                {keys.data.map((k) => (
                  <tr data-publishable-key-id={k.id}>
                    <td>{k.name}</td>
                    <td><code>{k.hint}</code></td>
                    <td>{when(k.createdAt)}</td>
                    <td>{when(k.lastUsedAt)}</td>
                    {writer && (
                      <td class="actions">
                        {confirm === k.id ? (
                          <>
                            <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Confirm revoking ${k.name}`}>Revoke for good</button>
                            <button type="button" onClick={() => setConfirm(null)}>Keep</button>
                          </>
                        ) : (
                          <button type="button" class="danger" onClick={() => setConfirm(k.id)} aria-label={`Revoke ${k.name}`}>Revoke</button>
                        )}
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {writer && (
          <form class="inline-form" onSubmit={mint}>
            <Field label="Key name" id="pk-name" error={fe('name')} hint="Where it is used, such as “marketing site”.">
              <input id="pk-name" name="name" required maxLength={100} aria-describedby="pk-name-hint" />
            </Field>
            <button type="submit" class="primary">Mint publishable key</button>
          </form>
        )}
      </section>
      <section aria-labelledby="snip-h">
        <h2 id="snip-h">Embed snippets</h2>
        <p class="muted">
          {fresh ? 'Filled in with your new key.' : 'Put your key in place of pk_... (a key is shown only when minted).'}
          {page && !page.published && ' The page is a draft: the widget and badges answer “not found” until it is published.'}
        </p>
        <Snippet id="snip-widget" title="Status widget" text={widget}>
          <p>Shows the overall status where the script stands (or in <code>data-target</code>), refreshed every minute.</p>
          <label class="check">
            <input type="checkbox" checked={components} onChange={(e) => setComponents((e.target as HTMLInputElement).checked)} /> List each component too
          </label>
        </Snippet>
        <div class="grid2">
          <Field label="Badge style" id="snip-style">
            <select id="snip-style" value={style} onChange={(e) => setStyle((e.target as HTMLSelectElement).value)}>
              <option value="flat">Flat</option>
              <option value="flat-square">Flat square</option>
              <option value="for-the-badge">For the badge</option>
            </select>
          </Field>
          <Field label="Uptime period" id="snip-uptime">
            <select id="snip-uptime" value={uptime} onChange={(e) => setUptime((e.target as HTMLSelectElement).value)}>
              <option value="24h">24 hours</option>
              <option value="7d">7 days</option>
              <option value="30d">30 days</option>
              <option value="90d">90 days</option>
            </select>
          </Field>
        </div>
        <Snippet id="snip-badge" title="Status badge" text={`<img src="${statusBadge}" alt="${name} status">`}>
          {showBadge && <p><img src={statusBadge} alt={`${name} status badge`} data-testid="badge-preview" /></p>}
        </Snippet>
        <Snippet id="snip-uptime-badge" title="Uptime badge" text={`<img src="${uptimeBadge}" alt="${name} uptime">`}>
          {showBadge && <p><img src={uptimeBadge} alt={`${name} uptime badge`} /></p>}
        </Snippet>
        <Snippet id="snip-url" title="Badge address" text={statusBadge} />
        {iframe && (
          <Snippet id="snip-iframe" title="Whole page in an iframe" text={iframe}>
            <p>The public page itself, no key needed (public pages only).</p>
          </Snippet>
        )}
      </section>
    </main>
  );
}

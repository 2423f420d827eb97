// The screens of one status page beyond its overview: the tabs that join them, the routes
// the shell asks for (`statusPageScreen`), and the page loader they share (with its ETag, so
// a save is version-locked with If-Match).
import type { VNode } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { Link, match, path } from '../router';
import { ErrorNote } from '../ui';
import { Branding } from './status-page-branding';
import { Postmortems } from './postmortems';
import { Subscribers } from './subscribers';
import { Embed } from './embed';

const TABS: [string, string][] = [
  ['', 'Overview'],
  ['/branding', 'Branding'],
  ['/postmortems', 'Postmortems'],
  ['/subscribers', 'Subscribers'],
  ['/embed', 'Embed'],
];

export function StatusPageTabs({ id }: { id: string }) {
  const base = `/status-pages/${id}`;
  const p = path.value;
  return (
    <nav class="tabs sp-tabs" aria-label="Status page sections">
      {TABS.map(([sub, label]) => {
        const here = sub === '' ? p === base : p.startsWith(base + sub);
        return (
          <Link href={base + sub} class="button" aria-current={here ? 'page' : undefined}>
            {label}
          </Link>
        );
      })}
    </nav>
  );
}

/** The screen for `p` if it is one of a status page's sections, else null. */
export function statusPageScreen(p: string): VNode | null {
  let m: Record<string, string> | null;
  if ((m = match('/status-pages/:id/branding', p))) return <Branding id={m.id} />;
  if ((m = match('/status-pages/:id/postmortems', p))) return <Postmortems id={m.id} />;
  if ((m = match('/status-pages/:id/postmortems/:pm', p))) return <Postmortems id={m.id} open={m.pm} />;
  if ((m = match('/status-pages/:id/subscribers', p))) return <Subscribers id={m.id} />;
  if ((m = match('/status-pages/:id/embed', p))) return <Embed id={m.id} />;
  return null;
}

export interface Loaded {
  page: Schemas['StatusPage'];
  etag: string | null;
}

/** One status page with its ETag; `set` takes the answer of a save. */
export function usePage(id: string) {
  const [loaded, setLoaded] = useState<Loaded | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    const req = api.GET('/status-pages/{page_id}', { params: { path: { page_id: id } } });
    call(req)
      .then(async (page) => {
        const etag = (await req).response.headers.get('etag');
        if (live) setLoaded({ page, etag });
      })
      .catch((e) => live && setError(e));
    return () => {
      live = false;
    };
  }, [id]);
  return { loaded, error, set: setLoaded };
}

/** The heading, back link and tabs every section screen starts with. */
export function SectionHead({ id, page, title, error }: { id: string; page?: Schemas['StatusPage']; title: string; error?: unknown }) {
  return (
    <>
      <p><Link href={`/status-pages/${id}`}>← {page?.name ?? 'Status page'}</Link></p>
      <h1>{title}{page && <span class="muted"> · {page.name}</span>}</h1>
      <StatusPageTabs id={id} />
      <ErrorNote error={error} />
    </>
  );
}

// Status pages: the list and a create form; one page's components (each optionally showing
// a monitor, put in order by `status-page-components.tsx`), publish and unpublish, and its
// incidents (open, post an update, resolve, publish). The page's other screens (branding,
// postmortems, subscribers, embedding) are reached by the tabs of `status-page-admin.tsx`.
// A viewer reads all of it and gets none of the forms or buttons that change it (role.ts).
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canWrite } from '../role';
import { Link, navigate } from '../router';
import { Badge, Empty, ErrorNote, Field, useLoad } from '../ui';
import { ComponentList, ComponentsEditor } from './status-page-components';
import { StatusPageTabs } from './status-page-admin';

/** A slug made from a page's name: lowercase ASCII letters and digits, other runs as one hyphen. */
export function slugOf(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
}

export function StatusPages() {
  const pages = useLoad(() => call(api.GET('/status-pages')), []);
  const [error, setError] = useState<unknown>(null);
  // The slug follows the name until the person edits it.
  const [slug, setSlug] = useState('');
  const [slugEdited, setSlugEdited] = useState(false);
  const create = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setError(null);
    try {
      const p = await call(api.POST('/status-pages', { body: { name: String(f.get('name')), slug: String(f.get('slug')) } }));
      navigate(`/status-pages/${p.id}`);
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const writer = canWrite();
  return (
    <main id="main">
      <h1>Status pages</h1>
      <ErrorNote error={pages.error} />
      {pages.data && pages.data.length === 0 && (
        <Empty title="No status pages yet">
          <p>
            A status page tells your users how your services are doing.
            {writer && ' Create one below, add components, then publish it.'}
          </p>
        </Empty>
      )}
      {pages.data && pages.data.length > 0 && (
        <ul class="cards">
          {pages.data.map((p) => (
            <li class="card">
              <h2><Link href={`/status-pages/${p.id}`}>{p.name}</Link></h2>
              <p class="muted">
                {p.published ? 'Published' : 'Draft'} · <a href={`/s/${p.slug}`}>/s/{p.slug}</a>
              </p>
            </li>
          ))}
        </ul>
      )}
      {writer && (
        <form class="card form" onSubmit={create}>
          <h2>New status page</h2>
          <ErrorNote error={error} />
          <Field label="Name" id="sp-name" error={fe('name')}>
            <input id="sp-name" name="name" required onInput={(e) => !slugEdited && setSlug(slugOf((e.target as HTMLInputElement).value))} />
          </Field>
          <Field label="Address (slug)" id="sp-slug" error={fe('slug')} hint="3 to 48 lowercase letters, digits and hyphens: the page is at /s/<slug>.">
            {/* Browsers compile `pattern` with the `v` flag, where a bare `-` in a class is an error. */}
            <input
              id="sp-slug"
              name="slug"
              required
              pattern="[a-z0-9\-]{3,48}"
              value={slug}
              onInput={(e) => {
                setSlugEdited(true);
                setSlug((e.target as HTMLInputElement).value);
              }}
            />
          </Field>
          <button type="submit" class="primary">Create status page</button>
        </form>
      )}
    </main>
  );
}

const STATUSES: Schemas['IncidentStatus'][] = ['INVESTIGATING', 'IDENTIFIED', 'MONITORING', 'RESOLVED'];
const SEVERITIES: [Schemas['IncidentSeverity'], string][] = [
  ['NONE', 'None'],
  ['MINOR', 'Minor'],
  ['MAJOR', 'Major'],
  ['CRITICAL', 'Critical'],
];

export function StatusPageDetail({ id }: { id: string }) {
  const path = { page_id: id };
  const page = useLoad(() => call(api.GET('/status-pages/{page_id}', { params: { path } })), [id]);
  const comps = useLoad(() => call(api.GET('/status-pages/{page_id}/components', { params: { path } })), [id]);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);
  const incidents = useLoad(() => call(api.GET('/incidents', { params: { query: { statusPageId: id } } })), [id]);
  const [error, setError] = useState<unknown>(null);

  const run = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      page.reload();
      comps.reload();
      incidents.reload();
    } catch (e) {
      setError(e);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const p = page.data;
  if (!p) return <main id="main" aria-busy="true"><ErrorNote error={page.error} />Loading…</main>;
  const list = comps.data ?? [];
  const writer = canWrite();

  const addComponent = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const next: Schemas['ComponentInput'][] = [
      ...list.map((c) => ({ id: c.id, name: c.name, group: c.group, monitorId: c.monitorId, description: c.description })),
      { name: String(f.get('name')), monitorId: String(f.get('monitor') || '') || null, group: String(f.get('group') || '').trim() || null },
    ];
    run(async () => {
      await call(api.PUT('/status-pages/{page_id}/components', { params: { path }, body: next }));
      form.reset();
    });
  };
  const openIncident = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    run(async () => {
      await call(
        api.POST('/incidents', {
          body: {
            statusPageId: id,
            title: String(f.get('title')),
            message: String(f.get('message')) || null,
            status: String(f.get('status')) as Schemas['IncidentStatus'],
            severity: String(f.get('severity') || 'NONE') as Schemas['IncidentSeverity'],
            visibility: f.get('publish') ? 'PUBLISHED' : 'DRAFT',
            affectedComponentIds: f.getAll('affected').map(String),
          },
        }),
      );
      form.reset();
    });
  };

  return (
    <main id="main">
      <p><Link href="/status-pages">← Status pages</Link></p>
      <div class="title-row">
        <h1>{p.name} <span class={`badge ${p.published ? 's-up' : 's-pending'}`}>{p.published ? 'Published' : 'Draft'}</span></h1>
        <div class="actions">
          <a class="button" href={`/s/${p.slug}`} target="_blank" rel="noopener">View public page</a>
          {writer && (p.published ? (
            <button type="button" onClick={() => run(() => call(api.POST('/status-pages/{page_id}/unpublish', { params: { path } })))}>Unpublish</button>
          ) : (
            <button type="button" class="primary" onClick={() => run(() => call(api.POST('/status-pages/{page_id}/publish', { params: { path } })))}>Publish</button>
          ))}
        </div>
      </div>
      <StatusPageTabs id={id} />
      <ErrorNote error={error} />
      <section aria-labelledby="comp-h">
        <h2 id="comp-h">Components</h2>
        {writer ? (
          <ComponentsEditor pageId={id} components={list} monitors={monitors.data ?? []} onSaved={() => comps.reload()} />
        ) : (
          <ComponentList components={list} monitors={monitors.data ?? []} />
        )}
        {writer && (
          <form class="inline-form" onSubmit={addComponent}>
            <Field label="Component name" id="c-name" error={fe(`${list.length}.name`)}>
              <input id="c-name" name="name" required />
            </Field>
            <Field label="Shows monitor" id="c-monitor">
              <select id="c-monitor" name="monitor">
                <option value="">None (set by incidents)</option>
                {(monitors.data ?? []).map((m) => <option value={m.id}>{m.name}</option>)}
              </select>
            </Field>
            <Field label="Group (optional)" id="c-group" error={fe(`${list.length}.group`)}>
              <input id="c-group" name="group" list="c-groups" maxLength={100} />
              <datalist id="c-groups">{[...new Set(list.map((c) => c.group).filter(Boolean))].map((g) => <option value={g ?? ''} />)}</datalist>
            </Field>
            <button type="submit">Add component</button>
          </form>
        )}
      </section>
      <section aria-labelledby="inc-h">
        <h2 id="inc-h">Incidents</h2>
        {incidents.data && incidents.data.incidents.length === 0 && !writer && <p>No incidents.</p>}
        {(incidents.data?.incidents ?? []).map((i) => <IncidentCard incident={i} onChange={() => incidents.reload()} />)}
        {writer && (
          <form class="card form" onSubmit={openIncident}>
            <h3>Open an incident</h3>
            <Field label="Title" id="i-title" error={fe('title')}>
              <input id="i-title" name="title" required />
            </Field>
            <Field label="First update" id="i-message" error={fe('message')}>
              <textarea id="i-message" name="message" required />
            </Field>
            <div class="grid3">
              <Field label="Status" id="i-status">
                <select id="i-status" name="status">
                  {STATUSES.slice(0, 3).map((s) => <option value={s}>{s}</option>)}
                </select>
              </Field>
              <Field label="Severity" id="i-severity" error={fe('severity')}>
                <select id="i-severity" name="severity">
                  {SEVERITIES.map(([v, label]) => <option value={v}>{label}</option>)}
                </select>
              </Field>
            </div>
            {list.length > 0 && (
              <fieldset>
                <legend>Affected components</legend>
                {list.map((c) => (
                  <label class="check"><input type="checkbox" name="affected" value={c.id} /> {c.name}</label>
                ))}
              </fieldset>
            )}
            <label class="check"><input type="checkbox" name="publish" value="1" /> Publish on the public page now</label>
            <button type="submit" class="primary">Open incident</button>
          </form>
        )}
      </section>
    </main>
  );
}

function IncidentCard({ incident: i, onChange }: { incident: Schemas['Incident']; onChange: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [resolving, setResolving] = useState(false);
  const path = { incident_id: i.id };
  // The update history, read with the incident (`IncidentWithUpdates`), again after each change.
  const history = useLoad(() => call(api.GET('/incidents/{incident_id}', { params: { path } })), [i.id, i.updatedAt]);
  const run = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      onChange();
      history.reload();
    } catch (e) {
      setError(e);
    }
  };
  const post = (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    run(async () => {
      await call(api.POST('/incidents/{incident_id}/updates', {
        params: { path },
        body: { message: String(f.get('message')), status: String(f.get('status')) as Schemas['IncidentStatus'] },
      }));
      form.reset();
    });
  };
  const resolve = (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    const message = String(f.get('message') ?? '').trim();
    run(async () => {
      await call(api.POST('/incidents/{incident_id}/resolve', { params: { path }, body: { message: message || null } }));
      setResolving(false);
    });
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const severity = SEVERITIES.find(([v]) => v === i.severity)?.[1];
  const writer = canWrite();
  const updates = [...(history.data?.updates ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return (
    <article class="card incident" data-incident-id={i.id}>
      <div class="title-row">
        <h3>
          {i.title} <Badge status={i.status} /> <span class="muted">{i.visibility}</span>
          {i.severity && i.severity !== 'NONE' && <span class={`severity sev-${i.severity.toLowerCase()}`}>{severity} severity</span>}
        </h3>
        <div class="actions">
          {writer && i.visibility !== 'PUBLISHED' && <button type="button" onClick={() => run(() => call(api.POST('/incidents/{incident_id}/publish', { params: { path } })))}>Publish</button>}
          {writer && i.status !== 'RESOLVED' && !resolving && <button type="button" onClick={() => setResolving(true)}>Resolve…</button>}
        </div>
      </div>
      <p class="muted">Opened {when(i.createdAt)}{i.resolvedAt && ` · resolved ${when(i.resolvedAt)}`}</p>
      <ErrorNote error={error} />
      {writer && resolving && (
        <form class="inline-form resolve-form" onSubmit={resolve} aria-label={`Resolve ${i.title}`}>
          <Field label="Closing message" id={`r-${i.id}`} error={fe('message')} hint="Shown as the last update: what was wrong and that it is fixed.">
            <textarea id={`r-${i.id}`} name="message" required rows={2} />
          </Field>
          <div class="actions">
            <button type="submit" class="primary">Resolve incident</button>
            <button type="button" onClick={() => setResolving(false)}>Cancel</button>
          </div>
        </form>
      )}
      {writer && i.status !== 'RESOLVED' && !resolving && (
        <form class="inline-form" onSubmit={post}>
          <Field label="Update" id={`u-${i.id}`}>
            <input id={`u-${i.id}`} name="message" required />
          </Field>
          <Field label="New status" id={`us-${i.id}`}>
            <select id={`us-${i.id}`} name="status" value={i.status}>
              {STATUSES.map((s) => <option value={s}>{s}</option>)}
            </select>
          </Field>
          <button type="submit">Post update</button>
        </form>
      )}
      {updates.length > 0 && (
        <details class="history" open={updates.length <= 5}>
          <summary>Update history ({updates.length})</summary>
          <ol class="updates" aria-label={`Updates of ${i.title}`}>
            {updates.map((u) => (
              <li data-update-id={u.id}>
                <Badge status={u.status} /> <time dateTime={u.createdAt}>{when(u.createdAt)}</time>
                {u.systemGenerated && <span class="muted"> (written by Tocsin)</span>}
                <p>{u.message}</p>
              </li>
            ))}
          </ol>
        </details>
      )}
    </article>
  );
}

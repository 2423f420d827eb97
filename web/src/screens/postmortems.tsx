// A status page's postmortems: the list (draft or published, with publish and delete), a
// form to write one for a resolved incident, and the editor of one (`open`): title and
// Markdown body beside a rendered preview, saved with If-Match. The Markdown renderer is
// loaded only when an editor is shown (see markdown.ts). A viewer reads the list and each
// postmortem rendered, with no form or button that changes them (role.ts).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canWrite } from '../role';
import { Link, navigate } from '../router';
import { Empty, ErrorNote, Field, useLoad } from '../ui';
import { SectionHead, usePage } from './status-page-admin';

type Postmortem = Schemas['Postmortem'];

const TEMPLATE = `## Summary

What happened, who was affected, for how long.

## Timeline

- **00:00 UTC** — First alert.

## Root cause

## What we are changing
`;

let renderer: Promise<typeof import('../markdown')> | null = null;

/** Markdown rendered as the public page will show it, once the renderer has loaded. */
function useMarkdown(text: string): string | null {
  const [html, setHtml] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    renderer ??= import('../markdown');
    renderer.then((m) => live && setHtml(m.toHtml(text)));
    return () => {
      live = false;
    };
  }, [text]);
  return html;
}

function MarkdownEditor(props: { id: string; value: string; error?: string; onInput: (v: string) => void }) {
  const html = useMarkdown(props.value);
  return (
    <div class="md-editor">
      <Field label="Body (Markdown)" id={props.id} error={props.error} hint="Headings, lists, links, tables, **bold**, `code`.">
        <textarea
          id={props.id}
          class="code"
          rows={16}
          value={props.value}
          aria-describedby={`${props.id}-hint`}
          onInput={(e) => props.onInput((e.target as HTMLTextAreaElement).value)}
        />
      </Field>
      <section class="md-preview-pane" aria-labelledby={`${props.id}-pv`}>
        <h3 id={`${props.id}-pv`}>Preview</h3>
        {html === null ? (
          <p class="muted" aria-busy="true">Loading the preview…</p>
        ) : (
          <div class="md-preview" data-testid="markdown-preview" dangerouslySetInnerHTML={{ __html: html }} />
        )}
      </section>
    </div>
  );
}

export function Postmortems({ id, open }: { id: string; open?: string }) {
  const { loaded, error: loadError } = usePage(id);
  const incidents = useLoad(() => call(api.GET('/incidents', { params: { query: { statusPageId: id } } })), [id]);
  const list = useLoad(() => call(api.GET('/postmortems')), [id, open]);
  const page = loaded?.page;
  const mine = (list.data ?? []).filter((p) => p.statusPageId === id);
  const all = incidents.data?.incidents ?? [];
  const resolved = all.filter((i) => i.status === 'RESOLVED');
  const writer = canWrite();
  const title = open ? (writer ? 'Edit postmortem' : 'Postmortem') : 'Postmortems';

  return (
    <main id="main" class="wide">
      <SectionHead id={id} page={page} title={title} error={loadError ?? list.error ?? incidents.error} />
      {open && !writer ? (
        <Reader postmortemId={open} pageId={id} slug={page?.slug} incidents={all} />
      ) : open ? (
        <Editor pageId={id} postmortemId={open} slug={page?.slug} incidents={all} onDeleted={() => navigate(`/status-pages/${id}/postmortems`)} />
      ) : (
        <>
          {list.data && mine.length === 0 && (
            <Empty title="No postmortems yet">
              <p>
                {!writer
                  ? 'A postmortem explains a resolved incident: what happened, why, and what changes.'
                  : resolved.length === 0
                    ? 'A postmortem explains a resolved incident. Resolve an incident on the Overview tab, then write its postmortem here.'
                    : 'Write one below for a resolved incident: what happened, why, and what changes.'}
              </p>
            </Empty>
          )}
          {mine.length > 0 && (
            <ul class="cards" aria-label="Postmortems of this page">
              {mine.map((p) => (
                <PostmortemCard p={p} pageId={id} slug={page?.slug} incident={all.find((i) => i.id === p.incidentId)} onChange={() => list.reload()} />
              ))}
            </ul>
          )}
          {writer && resolved.length > 0 && <NewPostmortem pageId={id} incidents={resolved} />}
        </>
      )}
    </main>
  );
}

function PostmortemCard(props: { p: Postmortem; pageId: string; slug?: string; incident?: Schemas['Incident']; onChange: () => void }) {
  const { p } = props;
  const [error, setError] = useState<unknown>(null);
  const [confirm, setConfirm] = useState(false);
  const path = { postmortem_id: p.id };
  const run = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      props.onChange();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <li class="card" data-postmortem-id={p.id}>
      <div class="title-row">
        <h2>
          <Link href={`/status-pages/${props.pageId}/postmortems/${p.id}`}>{p.title}</Link>{' '}
          <span class={`badge ${p.published ? 's-up' : 's-pending'}`}>{p.published ? 'Published' : 'Draft'}</span>
        </h2>
        {canWrite() && (
          <div class="actions">
            {!p.published && (
              <button type="button" onClick={() => run(() => call(api.POST('/postmortems/{postmortem_id}/publish', { params: { path } })))} aria-label={`Publish ${p.title}`}>
                Publish
              </button>
            )}
            {confirm ? (
              <>
                <button type="button" class="danger" onClick={() => run(() => call(api.DELETE('/postmortems/{postmortem_id}', { params: { path } })))}>Delete for good</button>
                <button type="button" onClick={() => setConfirm(false)}>Keep it</button>
              </>
            ) : (
              <button type="button" class="danger" onClick={() => setConfirm(true)} aria-label={`Delete ${p.title}`}>Delete</button>
            )}
          </div>
        )}
      </div>
      <p class="muted">
        {props.incident ? `Incident: ${props.incident.title}` : 'Incident'} · updated {when(p.updatedAt)}
        {p.published && props.slug && (
          <>
            {' '}· <a href={`/s/${props.slug}/postmortems/${p.id}`}>public page</a>
          </>
        )}
      </p>
      <ErrorNote error={error} />
    </li>
  );
}

function NewPostmortem({ pageId, incidents }: { pageId: string; incidents: Schemas['Incident'][] }) {
  const [body, setBody] = useState(TEMPLATE);
  const [error, setError] = useState<unknown>(null);
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const create = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setError(null);
    try {
      const p = await call(
        api.POST('/postmortems', { body: { incidentId: String(f.get('incident')), title: String(f.get('title')), body } }),
      );
      navigate(`/status-pages/${pageId}/postmortems/${p.id}`);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <form class="card" onSubmit={create} aria-labelledby="pm-new-h">
      <h2 id="pm-new-h">Write a postmortem</h2>
      <ErrorNote error={error} />
      <div class="grid2">
        <Field label="Incident" id="pm-incident" error={fe('incidentId')}>
          <select id="pm-incident" name="incident" required>
            {incidents.map((i) => <option value={i.id}>{i.title} (resolved {when(i.resolvedAt)})</option>)}
          </select>
        </Field>
        <Field label="Postmortem title" id="pm-title" error={fe('title')}>
          <input id="pm-title" name="title" required maxLength={200} />
        </Field>
      </div>
      <MarkdownEditor id="pm-body" value={body} error={fe('body')} onInput={setBody} />
      <p class="muted">Saved as a draft: readers see it once you publish it.</p>
      <button type="submit" class="primary">Save draft</button>
    </form>
  );
}

/** One postmortem as readers of the public page see it, for a viewer. */
function Reader(props: { pageId: string; postmortemId: string; slug?: string; incidents: Schemas['Incident'][] }) {
  const pm = useLoad(() => call(api.GET('/postmortems/{postmortem_id}', { params: { path: { postmortem_id: props.postmortemId } } })), [props.postmortemId]);
  const html = useMarkdown(pm.data?.body ?? '');
  if (!pm.data) return <div aria-busy="true"><ErrorNote error={pm.error} />Loading…</div>;
  const p = pm.data;
  const incident = props.incidents.find((i) => i.id === p.incidentId);
  return (
    <article class="card" aria-labelledby="pm-read-h">
      <div class="title-row">
        <h2 id="pm-read-h">
          {p.title} <span class={`badge ${p.published ? 's-up' : 's-pending'}`}>{p.published ? 'Published' : 'Draft'}</span>
        </h2>
        {p.published && props.slug && (
          <a class="button" href={`/s/${props.slug}/postmortems/${p.id}`} target="_blank" rel="noopener">View on the public page</a>
        )}
      </div>
      <p class="muted">
        {incident ? `Incident: ${incident.title}` : ''}
        {p.publishedAt && ` · published ${when(p.publishedAt)}`}
      </p>
      {html === null ? (
        <p class="muted" aria-busy="true">Loading…</p>
      ) : (
        <div class="md-preview" data-testid="markdown-preview" dangerouslySetInnerHTML={{ __html: html }} />
      )}
      <p><Link href={`/status-pages/${props.pageId}/postmortems`}>← All postmortems</Link></p>
    </article>
  );
}

function Editor(props: { pageId: string; postmortemId: string; slug?: string; incidents: Schemas['Incident'][]; onDeleted: () => void }) {
  const [pm, setPm] = useState<{ p: Postmortem; etag: string | null } | null>(null);
  const [title, setTitle] = useState('');
  const [body, setBody] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  const [confirm, setConfirm] = useState(false);
  const path = { postmortem_id: props.postmortemId };

  const take = (p: Postmortem, etag: string | null) => {
    setPm({ p, etag });
    setTitle(p.title);
    setBody(p.body);
  };
  useEffect(() => {
    const req = api.GET('/postmortems/{postmortem_id}', { params: { path } });
    call(req).then(async (p) => take(p, (await req).response.headers.get('etag')), setError);
  }, [props.postmortemId]);

  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  if (!pm) return <div aria-busy="true"><ErrorNote error={error} />Loading…</div>;
  const dirty = title !== pm.p.title || body !== pm.p.body;
  const incident = props.incidents.find((i) => i.id === pm.p.incidentId);

  const save = async () => {
    setError(null);
    const req = api.PATCH('/postmortems/{postmortem_id}', {
      params: { path, header: pm.etag ? { 'If-Match': pm.etag } : {} },
      body: { title, body },
    });
    const p = await call(req);
    take(p, (await req).response.headers.get('etag'));
    return p;
  };
  const act = async (what: 'save' | 'publish' | 'delete') => {
    setError(null);
    setNote('');
    try {
      if (what === 'save') {
        await save();
        setNote('Saved.');
      } else if (what === 'publish') {
        if (dirty) await save();
        const p = await call(api.POST('/postmortems/{postmortem_id}/publish', { params: { path } }));
        setPm((x) => (x ? { ...x, p } : x));
        setNote('Published on the status page.');
      } else {
        await call(api.DELETE('/postmortems/{postmortem_id}', { params: { path } }));
        props.onDeleted();
      }
    } catch (e) {
      setError(e);
    }
  };

  return (
    <form
      class="card"
      onSubmit={(e) => {
        e.preventDefault();
        act('save');
      }}
      aria-labelledby="pm-edit-h"
    >
      <div class="title-row">
        <h2 id="pm-edit-h">
          {pm.p.title} <span class={`badge ${pm.p.published ? 's-up' : 's-pending'}`}>{pm.p.published ? 'Published' : 'Draft'}</span>
        </h2>
        {pm.p.published && props.slug && (
          <a class="button" href={`/s/${props.slug}/postmortems/${pm.p.id}`} target="_blank" rel="noopener">View on the public page</a>
        )}
      </div>
      <p class="muted">
        {incident ? `Incident: ${incident.title}` : ''}
        {pm.p.publishedAt && ` · published ${when(pm.p.publishedAt)}`}
      </p>
      <ErrorNote error={error} />
      <Field label="Postmortem title" id="pe-title" error={fe('title')}>
        <input id="pe-title" value={title} required maxLength={200} onInput={(e) => setTitle((e.target as HTMLInputElement).value)} />
      </Field>
      <MarkdownEditor id="pe-body" value={body} error={fe('body')} onInput={setBody} />
      <div class="actions">
        <button type="submit" class={pm.p.published ? 'primary' : undefined} disabled={!dirty}>Save</button>
        {!pm.p.published && (
          <button type="button" class="primary" onClick={() => act('publish')}>{dirty ? 'Save and publish' : 'Publish'}</button>
        )}
        {confirm ? (
          <>
            <button type="button" class="danger" onClick={() => act('delete')}>Delete for good</button>
            <button type="button" onClick={() => setConfirm(false)}>Keep it</button>
          </>
        ) : (
          <button type="button" class="danger" onClick={() => setConfirm(true)}>Delete</button>
        )}
        <span role="status" class="muted">{note || (dirty ? 'Unsaved changes.' : '')}</span>
      </div>
      <p><Link href={`/status-pages/${props.pageId}/postmortems`}>← All postmortems</Link></p>
    </form>
  );
}

// A status page's email subscribers, in the API's cursor pages (oldest first, "Show more"
// fetches the next), with each one's state and chosen components; one can be removed, and a
// suspended one (the page turned private since it subscribed) re-admitted (neither by a
// viewer: role.ts).
import { useEffect, useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { when } from '../format';
import { canWrite } from '../role';
import { Badge, Empty, useLoad } from '../ui';
import { SectionHead, usePage } from './status-page-admin';

const PAGE_SIZE = 50;

export function Subscribers({ id }: { id: string }) {
  const { loaded, error: loadError } = usePage(id);
  const comps = useLoad(() => call(api.GET('/status-pages/{page_id}/components', { params: { path: { page_id: id } } })), [id]);
  const [rows, setRows] = useState<Schemas['Subscriber'][] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [confirm, setConfirm] = useState<string | null>(null);
  const [said, setSaid] = useState('');
  const path = { page_id: id };

  const fetchPage = async (cursor: string | null) => {
    setError(null);
    try {
      const r = await call(api.GET('/status-pages/{page_id}/subscribers', { params: { path, query: { cursor, limit: PAGE_SIZE } } }));
      setRows((old) => (cursor && old ? [...old, ...r.subscribers] : r.subscribers));
      setNext(r.nextCursor);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    fetchPage(null);
  }, [id]);

  const remove = async (s: Schemas['Subscriber']) => {
    setError(null);
    try {
      await call(api.DELETE('/status-pages/{page_id}/subscribers/{subscriber_id}', { params: { path: { page_id: id, subscriber_id: s.id } } }));
      setRows((old) => (old ?? []).filter((x) => x.id !== s.id));
      setConfirm(null);
      setSaid(`Removed ${s.email}.`);
    } catch (e) {
      setError(e);
    }
  };

  const readmit = async (s: Schemas['Subscriber']) => {
    setError(null);
    try {
      const back = await call(api.POST('/status-pages/{page_id}/subscribers/{subscriber_id}/readmit', { params: { path: { page_id: id, subscriber_id: s.id } } }));
      setRows((old) => (old ?? []).map((x) => (x.id === s.id ? back : x)));
      setSaid(`Re-admitted ${s.email}.`);
    } catch (e) {
      setError(e);
    }
  };

  const page = loaded?.page;
  const writer = canWrite();
  const names = (ids: string[]) =>
    ids.length === 0 ? 'Whole page' : ids.map((c) => comps.data?.find((x) => x.id === c)?.name ?? 'removed component').join(', ');

  return (
    <main id="main">
      <SectionHead id={id} page={page} title="Subscribers" error={loadError ?? error} />
      <p class="sr-only" role="status">{said}</p>
      {rows && rows.length === 0 && (
        <Empty title="No subscribers yet">
          <p>
            Readers subscribe by email to a published page with <code>POST /api/v1/status-pages/{page?.slug ?? '{slug}'}/subscribers</code>{' '}
            (for example from a form on your site); each confirms by email, then hears about published incidents.
            {page && !page.published && ' Publish the page first: a draft takes no subscriptions.'}
          </p>
        </Empty>
      )}
      {rows && rows.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>{rows.length}{next ? '+' : ''} subscriber{rows.length === 1 ? '' : 's'}, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">State</th>
                <th scope="col">Hears about</th>
                <th scope="col">Subscribed</th>
                <th scope="col">Confirmed</th>
                {writer && <th scope="col"><span class="sr-only">Actions</span></th>}
              </tr>
            </thead>
            <tbody>
              {rows.map((s) => (
                <tr data-subscriber-id={s.id}>
                  <td>{s.email}</td>
                  <td><Badge status={s.state} /></td>
                  <td>{names(s.componentIds)}</td>
                  <td>{when(s.createdAt)}</td>
                  <td>{s.verified ? when(s.verifiedAt) : 'Not yet'}</td>
                  {writer && (
                    <td class="actions">
                      {confirm === s.id ? (
                        <>
                          <button type="button" class="danger" onClick={() => remove(s)} aria-label={`Confirm removing ${s.email}`}>Remove for good</button>
                          <button type="button" onClick={() => setConfirm(null)}>Keep</button>
                        </>
                      ) : (
                        <>
                          {s.state === 'SUSPENDED' && (
                            <button type="button" onClick={() => readmit(s)} aria-label={`Re-admit ${s.email}`}>Re-admit</button>
                          )}
                          <button type="button" class="danger" onClick={() => setConfirm(s.id)} aria-label={`Remove ${s.email}`}>Remove</button>
                        </>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {next && (
        <p><button type="button" onClick={() => fetchPage(next)}>Show more subscribers</button></p>
      )}
      {rows === null && !error && <p aria-busy="true">Loading…</p>}
    </main>
  );
}

// Alerts: open and acknowledged outages (resolved ones on request), with acknowledge (not for a
// viewer: role.ts). An alert suppressed under a dependency's outage says so ("suppressed by
// <root>"); "Roots only" hides those.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call, type Monitor, type Schemas } from '../api/client';
import { when } from '../format';
import { onLive } from '../live';
import { canWrite } from '../role';
import { Link } from '../router';
import { Badge, Empty, ErrorNote } from '../ui';

type Filter = 'open' | 'acknowledged' | 'resolved';

/** Acknowledges alert `id`, then reloads; a refusal is shown. */
async function acknowledge(id: string, reload: () => unknown, fail: (e: unknown) => void) {
  try {
    await call(api.POST('/alerts/{alert_id}/acknowledge', { params: { path: { alert_id: id } } }));
    reload();
  } catch (e) {
    fail(e);
  }
}

export function Alerts() {
  const [filter, setFilter] = useState<Filter>('open');
  const [alerts, setAlerts] = useState<Schemas['Alert'][] | null>(null);
  const [names, setNames] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>(null);
  const [rootOnly, setRootOnly] = useState(false);
  // Root alert id -> its monitor id, for roots not on this page.
  const [roots, setRoots] = useState<Record<string, string>>({});

  // Only the newest request's answer is shown: a reload for the filter just left (after an
  // acknowledgement, or a live event) could otherwise land after the new filter's answer.
  const latest = useRef(0);
  const load = () => {
    const asked = ++latest.current;
    return call(api.GET('/alerts', { params: { query: { status: filter, limit: 200, ...(rootOnly ? { rootOnly: true } : {}) } } })).then((p) => {
      if (asked !== latest.current) return;
      setAlerts(p.alerts);
      setError(null);
      const missing = [...new Set(p.alerts.map((a) => a.rootCauseAlertId).filter((r): r is string => !!r))].filter(
        (r) => !p.alerts.some((a) => a.id === r),
      );
      Promise.all(missing.map((r) => call(api.GET('/alerts/{alert_id}', { params: { path: { alert_id: r } } })))).then(
        (found) => setRoots((was) => ({ ...was, ...Object.fromEntries(found.map((a) => [a.id, a.monitorId])) })),
        () => undefined,
      );
    }, (e) => {
      if (asked === latest.current) setError(e);
    });
  };
  const rootMonitor = (rootId: string) => alerts?.find((x) => x.id === rootId)?.monitorId ?? roots[rootId];

  useEffect(() => {
    setAlerts(null);
    load();
    return onLive((kind) => {
      if (kind === 'alert' || kind === 'poll') load();
    });
  }, [filter, rootOnly]);
  useEffect(() => {
    call(api.GET('/monitors')).then((ms: Monitor[]) => setNames(Object.fromEntries(ms.map((m) => [m.id, m.name]))), () => undefined);
  }, []);

  const ack = (id: string) => acknowledge(id, load, setError);

  return (
    <main id="main">
      <h1>Alerts</h1>
      <div class="tabs" role="group" aria-label="Which alerts">
        {(['open', 'acknowledged', 'resolved'] as Filter[]).map((f) => (
          <button type="button" aria-pressed={filter === f} onClick={() => setFilter(f)}>
            {f[0].toUpperCase() + f.slice(1)}
          </button>
        ))}
      </div>
      <label class="check">
        <input type="checkbox" checked={rootOnly} onChange={(e) => setRootOnly((e.target as HTMLInputElement).checked)} />
        Roots only (hide alerts suppressed under a dependency's outage)
      </label>
      <ErrorNote error={error} />
      {alerts === null ? (
        <p aria-busy="true">Loading…</p>
      ) : alerts.length === 0 ? (
        <Empty title={filter === 'open' ? 'No open alerts' : `No ${filter} alerts`}>
          <p>An alert opens when a monitor goes down and resolves when it recovers. Notification channels tell you about it.</p>
        </Empty>
      ) : (
        <ul class="cards">
          {alerts.map((a) => (
            <li class="card alert" data-alert-id={a.id}>
              <div class="title-row">
                <h2>
                  <Link href={`/monitors/${a.monitorId}`}>{names[a.monitorId] ?? a.monitorId}</Link> <Badge status={a.status} />
                </h2>
                {a.status === 'OPEN' && canWrite() && (
                  <button type="button" class="primary" onClick={() => ack(a.id)}>
                    Acknowledge
                  </button>
                )}
              </div>
              <p>{a.cause}</p>
              {a.rootCauseAlertId && (
                <p class="muted" data-testid="suppressed-by">
                  Suppressed by{' '}
                  {rootMonitor(a.rootCauseAlertId) ? (
                    <Link href={`/monitors/${rootMonitor(a.rootCauseAlertId)}`}>
                      {names[rootMonitor(a.rootCauseAlertId) ?? ''] ?? rootMonitor(a.rootCauseAlertId)}
                    </Link>
                  ) : (
                    'a dependency’s alert'
                  )}
                  : this outage pages through its root.
                </p>
              )}
              <p class="muted">
                Opened {when(a.openedAt)}
                {a.acknowledgedAt && ` · acknowledged ${when(a.acknowledgedAt)}`}
                {a.resolvedAt && ` · resolved ${when(a.resolvedAt)}`}
              </p>
            </li>
          ))}
        </ul>
      )}
    </main>
  );
}

/** One alert, where a notification's alert link leads: what happened, acknowledge, and whom
 *  it reached. */
export function AlertDetail({ id }: { id: string }) {
  const [alert, setAlert] = useState<Schemas['Alert'] | null>(null);
  const [monitor, setMonitor] = useState<string | null>(null);
  const [deliveries, setDeliveries] = useState<Schemas['Delivery'][]>([]);
  const [error, setError] = useState<unknown>(null);
  const load = () =>
    call(api.GET('/alerts/{alert_id}', { params: { path: { alert_id: id } } })).then((a) => {
      setAlert(a);
      setError(null);
      call(api.GET('/monitors/{monitor_id}', { params: { path: { monitor_id: a.monitorId } } })).then(
        (m) => setMonitor(m.name),
        () => undefined,
      );
      call(api.GET('/alerts/{alert_id}/deliveries', { params: { path: { alert_id: id }, query: { event: null } } })).then(
        (p) => setDeliveries(p.deliveries),
        () => undefined,
      );
    }, setError);
  useEffect(() => {
    load();
    return onLive((kind) => {
      if (kind === 'alert' || kind === 'poll') load();
    });
  }, [id]);
  const ack = () => acknowledge(id, load, setError);
  return (
    <main id="main">
      <p>
        <Link href="/alerts">All alerts</Link>
      </p>
      <ErrorNote error={error} />
      {alert && (
        <section class="card alert" data-alert-id={alert.id}>
          <div class="title-row">
            <h1>
              Alert: <Link href={`/monitors/${alert.monitorId}`}>{monitor ?? alert.monitorId}</Link> <Badge status={alert.status} />
            </h1>
            {alert.status === 'OPEN' && canWrite() && (
              <button type="button" class="primary" onClick={ack}>
                Acknowledge
              </button>
            )}
          </div>
          <p>{alert.cause}</p>
          <p class="muted">
            Opened {when(alert.openedAt)}
            {alert.acknowledgedAt && ` · acknowledged ${when(alert.acknowledgedAt)} by ${alert.acknowledgedBy ?? 'someone'}`}
            {alert.resolvedAt && ` · resolved ${when(alert.resolvedAt)}`}
          </p>
          <h2>Notifications</h2>
          {deliveries.length === 0 ? (
            <p class="muted">No notification was sent for this alert.</p>
          ) : (
            <ul>
              {deliveries.map((d) => (
                <li>
                  {d.event}: {d.status} ({when(d.createdAt)})
                </li>
              ))}
            </ul>
          )}
        </section>
      )}
    </main>
  );
}

// The monitor list: every monitor of the workspace loaded once, filtered in the browser
// (status, type, project, tag, name search) and drawn virtualised: only the rows in view
// exist in the DOM, so 10,000 monitors scroll like 10. Status changes arrive live.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, call, type Monitor, type MonitorStatus, type Schemas } from '../api/client';
import { ago } from '../format';
import { onLive } from '../live';
import { Link, navigate } from '../router';
import { Badge, Empty, ErrorNote } from '../ui';

const ROW = 48;
const STATUSES: MonitorStatus[] = ['UP', 'DOWN', 'DEGRADED', 'CHANGED', 'MAINTENANCE', 'PENDING'];
const TYPES = ['HTTP', 'TCP', 'PING', 'DNS', 'DNS_DIFF', 'WEBSOCKET', 'PUSH'];

function target(m: Monitor): string {
  if (m.url) return m.url;
  if (m.host) return m.port ? `${m.host}:${m.port}` : m.host;
  return m.type === 'PUSH' ? 'push' : '';
}

export function MonitorList() {
  const [monitors, setMonitors] = useState<Monitor[] | null>(null);
  const [projects, setProjects] = useState<Schemas['Project'][]>([]);
  const [error, setError] = useState<unknown>(null);
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [project, setProject] = useState('');
  const [tag, setTag] = useState('');
  const [q, setQ] = useState('');

  const load = () =>
    call(api.GET('/monitors')).then(
      (m) => {
        setMonitors(m);
        setError(null);
      },
      setError,
    );

  useEffect(() => {
    load();
    call(api.GET('/projects')).then(setProjects, () => undefined);
    let pending: number | undefined;
    return onLive((kind, data) => {
      if (kind === 'monitor' && data?.monitorId) {
        // Patch the one row at once; no refetch for a status change.
        setMonitors((list) =>
          list ? list.map((m) => (m.id === data.monitorId ? { ...m, status: data.status } : m)) : list,
        );
      } else if (kind === 'monitor.changed' || kind === 'poll') {
        clearTimeout(pending);
        pending = window.setTimeout(load, kind === 'poll' ? 0 : 300);
      }
    });
  }, []);

  const tags = useMemo(() => {
    const all = new Set<string>();
    for (const m of monitors ?? []) for (const t of m.tags) all.add(t);
    return [...all].sort();
  }, [monitors]);

  const shown = useMemo(() => {
    if (!monitors) return [];
    const needle = q.trim().toLowerCase();
    const members = project ? new Set(projects.find((p) => p.id === project)?.monitorIds ?? []) : null;
    return monitors.filter(
      (m) =>
        (!status || (status === 'PAUSED' ? !m.active : m.status === status)) &&
        (!type || m.type === type) &&
        (!tag || m.tags.includes(tag)) &&
        (!members || members.has(m.id)) &&
        (!needle || m.name.toLowerCase().includes(needle) || target(m).toLowerCase().includes(needle)),
    );
  }, [monitors, projects, status, type, project, tag, q]);

  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const m of monitors ?? []) {
      const k = m.active ? m.status : 'PAUSED';
      c[k] = (c[k] ?? 0) + 1;
    }
    return c;
  }, [monitors]);

  return (
    <main id="main">
      <div class="title-row">
        <h1>Monitors</h1>
        <Link class="button primary" href="/monitors/new">
          New monitor
        </Link>
      </div>
      <ErrorNote error={error} />
      {monitors && monitors.length === 0 ? (
        <Empty title="No monitors yet">
          <p>A monitor checks a website, API, server or cron job and tells you when it stops answering.</p>
          <p>
            <Link class="button primary" href="/monitors/new">
              Create your first monitor
            </Link>
          </p>
        </Empty>
      ) : (
        <>
          <ul class="counts" aria-label="Monitors by status">
            {[...STATUSES, 'PAUSED'].filter((s) => counts[s]).map((s) => (
              <li>
                <Badge status={s} /> {counts[s]}
              </li>
            ))}
          </ul>
          <div class="filters" role="search">
            <div>
              <label for="f-search">Search</label>
              <input id="f-search" type="search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} placeholder="Name or address" />
            </div>
            <div>
              <label for="f-status">Status</label>
              <select id="f-status" value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value)}>
                <option value="">Any</option>
                {[...STATUSES, 'PAUSED'].map((s) => (
                  <option value={s}>{s}</option>
                ))}
              </select>
            </div>
            <div>
              <label for="f-type">Type</label>
              <select id="f-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
                <option value="">Any</option>
                {TYPES.map((s) => (
                  <option value={s}>{s}</option>
                ))}
              </select>
            </div>
            <div>
              <label for="f-project">Project</label>
              <select id="f-project" value={project} onChange={(e) => setProject((e.target as HTMLSelectElement).value)}>
                <option value="">Any</option>
                {projects.map((p) => (
                  <option value={p.id}>{p.name}</option>
                ))}
              </select>
            </div>
            <div>
              <label for="f-tag">Tag</label>
              <select id="f-tag" value={tag} onChange={(e) => setTag((e.target as HTMLSelectElement).value)}>
                <option value="">Any</option>
                {tags.map((t) => (
                  <option value={t}>{t}</option>
                ))}
              </select>
            </div>
          </div>
          {monitors === null ? (
            <p aria-busy="true">Loading monitors…</p>
          ) : (
            <>
              <p class="muted" aria-live="polite">
                {shown.length === monitors.length ? `${monitors.length} monitor${monitors.length === 1 ? '' : 's'}` : `${shown.length} of ${monitors.length} monitors`}
              </p>
              {shown.length === 0 ? <p>No monitor matches these filters.</p> : <VirtualRows rows={shown} />}
            </>
          )}
        </>
      )}
    </main>
  );
}

function VirtualRows({ rows }: { rows: Monitor[] }) {
  const box = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight || 600);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const first = Math.max(0, Math.floor(top / ROW) - 5);
  const last = Math.min(rows.length, Math.ceil((top + height) / ROW) + 5);
  const slice = rows.slice(first, last);
  return (
    <div
      class="vlist"
      ref={box}
      role="list"
      aria-label="Monitors"
      onScroll={(e) => setTop((e.target as HTMLDivElement).scrollTop)}
      style={{ height: `min(70vh, ${rows.length * ROW + 2}px)` }}
    >
      <div style={{ height: `${rows.length * ROW}px`, position: 'relative' }}>
        {slice.map((m, i) => (
          <div
            role="listitem"
            class="vrow"
            key={m.id}
            data-monitor-id={m.id}
            style={{ transform: `translateY(${(first + i) * ROW}px)` }}
          >
            <Badge status={m.active ? m.status : 'PAUSED'} />
            <a
              href={`/app/monitors/${m.id}`}
              class="name"
              onClick={(e) => {
                if (e.button !== 0 || e.metaKey || e.ctrlKey) return;
                e.preventDefault();
                navigate(`/monitors/${m.id}`);
              }}
            >
              {m.name}
            </a>
            <span class="target muted">{target(m)}</span>
            <span class="type">{m.type}</span>
            <span class="when muted">{ago(m.lastCheckAt)}</span>
          </div>
        ))}
      </div>
    </div>
  );
}

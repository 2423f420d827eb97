// The monitor list: every monitor of the workspace loaded once (`GET /monitors`) with every
// monitor's last checks, 24-hour uptime and latest response time (`GET /monitors/summary`):
// two requests whatever the number of monitors. Filtered in the browser (status, type,
// project, tag, name search) and drawn virtualised: only the rows in view exist in the DOM, so
// 10,000 monitors scroll like 10. Status changes and check results arrive live and are
// applied once per animation frame; check results go to a store of their own (`RowData`) that
// only the list's rows read, so a frame of a thousand results redraws just the rows in view
// whose checks changed, not the screen. Selected rows can be paused, resumed, deleted, added to
// a project or given notification channels together; `/`, `n`, `j`, `k`, `x` and `?` work
// from the keyboard (see `Shortcuts`). A viewer gets the list without selection, bulk actions
// or "New monitor" (role.ts).
import { Component } from 'preact';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, call, type Monitor, type MonitorStatus, type Schemas } from '../api/client';
import { BeatBar, type Beat } from '../beats';
import { ConfirmButton } from '../confirm';
import { ms, pct } from '../format';
import { onLive } from '../live';
import { canWrite } from '../role';
import { Link, navigate } from '../router';
import { Badge, Empty, ErrorNote } from '../ui';

type Summary = Schemas['MonitorSummary'];

const ROW = 48;
/** Marks in each row's heartbeat bar (the summary holds the last 40 checks). */
const SLOTS = 40;
const STATUSES: MonitorStatus[] = ['UP', 'DOWN', 'DEGRADED', 'CHANGED', 'MAINTENANCE', 'PENDING'];
const TYPES = ['HTTP', 'TCP', 'PING', 'DNS', 'DNS_DIFF', 'WEBSOCKET', 'PUSH'];
/** Requests a bulk action keeps in flight at once. */
const PARALLEL = 6;

/** What a row shows beside the monitor's settings. */
interface Live {
  beats: Beat[];
  uptime: number | null;
  latency: number | null;
}

const NONE: Live = { beats: [], uptime: null, latency: null };

function target(m: Monitor): string {
  if (m.url) return m.url;
  if (m.host) return m.port ? `${m.host}:${m.port}` : m.host;
  return m.type === 'PUSH' ? 'push' : '';
}

function fromSummaries(list: Summary[]): Map<string, Live> {
  const out = new Map<string, Live>();
  for (const s of list) {
    out.set(s.monitorId, {
      beats: s.recent.map((r) => ({ status: r.status, latency: r.latency, at: r.at })),
      uptime: s.uptime24h ?? null,
      latency: s.latency ?? null,
    });
  }
  return out;
}

/** Each monitor's checks, uptime and response time, outside the screen's state: a batch of
 *  results replaces the entries of the monitors it names (so a row can tell by identity that
 *  its own changed) and tells the subscribed list which monitors those were. */
class RowData {
  private rows = new Map<string, Live>();
  private subscribers = new Set<(changed: Set<string> | null) => void>();

  get(id: string): Live {
    return this.rows.get(id) ?? NONE;
  }

  /** The whole set, from a summary; every row may have changed. */
  replace(rows: Map<string, Live>) {
    this.rows = rows;
    this.notify(null);
  }

  /** New check results; the ones the bar already holds (the summary raced the stream) are
   *  dropped. */
  add(batch: { monitorId: string; status: string; latencyMs: number; at: string }[]) {
    const changed = new Set<string>();
    for (const b of batch) {
      const cur = this.get(b.monitorId);
      const last = cur.beats[cur.beats.length - 1];
      if (last && Date.parse(b.at) <= Date.parse(last.at)) continue;
      const beats = cur.beats.length >= SLOTS ? cur.beats.slice(1 - SLOTS) : cur.beats.slice();
      beats.push({ status: b.status, latency: b.latencyMs, at: b.at });
      this.rows.set(b.monitorId, { ...cur, beats, latency: b.latencyMs });
      changed.add(b.monitorId);
    }
    if (changed.size) this.notify(changed);
  }

  subscribe(f: (changed: Set<string> | null) => void): () => void {
    this.subscribers.add(f);
    return () => this.subscribers.delete(f);
  }

  private notify(changed: Set<string> | null) {
    for (const f of this.subscribers) f(changed);
  }
}

function typing(t: EventTarget | null): boolean {
  const el = t as HTMLElement | null;
  if (!el) return false;
  return el.isContentEditable || ['INPUT', 'SELECT', 'TEXTAREA'].includes(el.tagName);
}

/** Runs `act` on every id, `PARALLEL` at a time; the ids it failed for, with the reason. */
async function each(ids: string[], act: (id: string) => Promise<unknown>): Promise<[string, unknown][]> {
  const failed: [string, unknown][] = [];
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        await act(id);
      } catch (e) {
        failed.push([id, e]);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, ids.length) }, worker));
  return failed;
}

export function MonitorList() {
  const [monitors, setMonitors] = useState<Monitor[] | null>(null);
  const [rowData] = useState(() => new RowData());
  const [projects, setProjects] = useState<Schemas['Project'][]>([]);
  const [error, setError] = useState<unknown>(null);
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [project, setProject] = useState('');
  const [tag, setTag] = useState('');
  const [q, setQ] = useState('');
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [active, setActive] = useState(-1);
  const [help, setHelp] = useState(false);
  const search = useRef<HTMLInputElement>(null);

  const load = () =>
    Promise.all([call(api.GET('/monitors')), call(api.GET('/monitors/summary'))]).then(
      ([m, s]) => {
        setMonitors(m);
        rowData.replace(fromSummaries(s));
        setError(null);
      },
      setError,
    );
  const loadProjects = () => call(api.GET('/projects')).then(setProjects, () => undefined);

  useEffect(() => {
    load();
    loadProjects();
    let pending: number | undefined;
    // Check results are applied in batches, once per frame: a workspace's results arrive
    // together once a second, and a thousand of them should cost one render.
    let queued: { monitorId: string; status: string; latencyMs: number; at: string }[] = [];
    // Status changes too: a thousand monitors going down at once is one pass over the list.
    let statuses = new Map<string, Monitor['status']>();
    let frame = 0;
    const flush = () => {
      frame = 0;
      const batch = queued;
      queued = [];
      const changed = statuses;
      statuses = new Map();
      if (changed.size) {
        // A new list only when a status really moved: an unchanged list keeps every row as it is.
        setMonitors((list) => {
          if (!list || !list.some((m) => changed.has(m.id) && changed.get(m.id) !== m.status)) return list;
          return list.map((m) => (changed.has(m.id) && changed.get(m.id) !== m.status ? { ...m, status: changed.get(m.id)! } : m));
        });
      }
      if (batch.length) rowData.add(batch);
    };
    const off = onLive((kind, data) => {
      if (kind === 'heartbeat' && data?.monitorId) {
        queued.push(data);
        if (!frame) frame = requestAnimationFrame(flush);
      } else if (kind === 'monitor' && data?.monitorId) {
        // Patch the row in the next frame's batch; no refetch for a status change.
        statuses.set(data.monitorId, data.status);
        if (!frame) frame = requestAnimationFrame(flush);
      } else if (kind === 'monitor.changed' || kind === 'poll') {
        clearTimeout(pending);
        pending = window.setTimeout(load, kind === 'poll' ? 0 : 300);
      }
    });
    // The uptime figures move slowly and are not in the live events: refreshed each minute.
    const minute = window.setInterval(() => call(api.GET('/monitors/summary')).then((s) => rowData.replace(fromSummaries(s)), () => undefined), 60_000);
    return () => {
      off();
      clearTimeout(pending);
      clearInterval(minute);
      if (frame) cancelAnimationFrame(frame);
    };
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

  // The selection keeps only monitors that still exist.
  useEffect(() => {
    if (!monitors || selected.size === 0) return;
    const ids = new Set(monitors.map((m) => m.id));
    if ([...selected].some((id) => !ids.has(id))) setSelected(new Set([...selected].filter((id) => ids.has(id))));
  }, [monitors]);

  const toggle = useCallback(
    (id: string) =>
      setSelected((s) => {
        const n = new Set(s);
        if (n.has(id)) n.delete(id);
        else n.add(id);
        return n;
      }),
    [],
  );

  // Keyboard shortcuts, while no field has the focus.
  const keys = useRef({ shown, active, help });
  keys.current = { shown, active, help };
  const closeHelp = () => setHelp(false);
  // Once the help has closed, the focus goes back to the current row (or the help button).
  const hadHelp = useRef(false);
  useEffect(() => {
    if (hadHelp.current && !help) {
      document
        .querySelector<HTMLElement>(active >= 0 ? `.vrow[data-index="${active}"] a.name` : 'button.keys-help')
        ?.focus();
    }
    hadHelp.current = help;
  }, [help]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      const k = keys.current;
      if (e.key === 'Escape' && k.help) {
        closeHelp();
        return;
      }
      if (typing(e.target)) return;
      const move = (to: number) => {
        if (!k.shown.length) return;
        e.preventDefault();
        setActive(Math.max(0, Math.min(k.shown.length - 1, to)));
      };
      switch (e.key) {
        case '/':
          e.preventDefault();
          search.current?.focus();
          break;
        case 'n':
          if (!canWrite()) break;
          e.preventDefault();
          navigate('/monitors/new');
          break;
        case 'j':
          move(k.active < 0 ? 0 : k.active + 1);
          break;
        case 'k':
          move(k.active < 0 ? 0 : k.active - 1);
          break;
        case 'x':
          if (canWrite() && k.shown[k.active]) {
            e.preventDefault();
            toggle(k.shown[k.active].id);
          }
          break;
        case '?':
          e.preventDefault();
          setHelp((h) => !h);
          break;
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  const shownIds = useMemo(() => shown.map((m) => m.id), [shown]);
  const allShownSelected = useMemo(() => shownIds.length > 0 && shownIds.every((id) => selected.has(id)), [shownIds, selected]);
  const writer = canWrite();

  return (
    <main id="main">
      <div class="title-row">
        <h1>Monitors</h1>
        <div class="actions">
          <button type="button" class="link keys-help" onClick={() => setHelp(true)} aria-keyshortcuts="?">
            Keyboard shortcuts
          </button>
          {writer && (
            <Link class="button primary" href="/monitors/new">
              New monitor
            </Link>
          )}
        </div>
      </div>
      {help && <Shortcuts onClose={closeHelp} writer={writer} />}
      <ErrorNote error={error} />
      {monitors && monitors.length === 0 ? (
        <Empty title="No monitors yet">
          <p>A monitor checks a website, API, server or cron job and tells you when it stops answering.</p>
          {writer && (
            <p>
              <Link class="button primary" href="/monitors/new">
                Create your first monitor
              </Link>
            </p>
          )}
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
              <input
                id="f-search"
                ref={search}
                type="search"
                value={q}
                aria-keyshortcuts="/"
                onInput={(e) => setQ((e.target as HTMLInputElement).value)}
                placeholder="Name or address"
              />
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
              <div class="list-head">
                {writer && (
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={allShownSelected}
                      disabled={shown.length === 0}
                      onChange={() =>
                        setSelected((s) => {
                          const n = new Set(s);
                          for (const id of shownIds) {
                            if (allShownSelected) n.delete(id);
                            else n.add(id);
                          }
                          return n;
                        })
                      }
                    />{' '}
                    Select all shown
                  </label>
                )}
                <p class="muted" aria-live="polite">
                  {shown.length === monitors.length
                    ? `${monitors.length} monitor${monitors.length === 1 ? '' : 's'}`
                    : `${shown.length} of ${monitors.length} monitors`}
                </p>
              </div>
              {writer && selected.size > 0 && (
                <BulkBar
                  ids={[...selected]}
                  projects={projects}
                  onClear={() => setSelected(new Set())}
                  onDone={(deleted) => {
                    if (deleted) setSelected(new Set());
                    load();
                    loadProjects();
                  }}
                />
              )}
              {shown.length === 0 ? (
                <p>No monitor matches these filters.</p>
              ) : (
                <VirtualRows rows={shown} data={rowData} selected={selected} active={active} onToggle={writer ? toggle : null} />
              )}
            </>
          )}
        </>
      )}
    </main>
  );
}

function Shortcuts({ onClose, writer }: { onClose: () => void; writer: boolean }) {
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => close.current?.focus(), []);
  return (
    <div class="card shortcuts" role="dialog" aria-modal="false" aria-labelledby="keys-h">
      <h2 id="keys-h">Keyboard shortcuts</h2>
      <dl>
        <dt><kbd>/</kbd></dt>
        <dd>Search</dd>
        {writer && (
          <>
            <dt><kbd>n</kbd></dt>
            <dd>New monitor</dd>
          </>
        )}
        <dt><kbd>j</kbd> / <kbd>k</kbd></dt>
        <dd>Next / previous monitor (Enter opens it)</dd>
        {writer && (
          <>
            <dt><kbd>x</kbd></dt>
            <dd>Select or unselect the current monitor</dd>
          </>
        )}
        <dt><kbd>?</kbd></dt>
        <dd>Show or hide this help</dd>
      </dl>
      <button type="button" ref={close} onClick={onClose}>
        Close
      </button>
    </div>
  );
}

/** The actions on the selected monitors, and what the last one did. */
function BulkBar(props: { ids: string[]; projects: Schemas['Project'][]; onClear: () => void; onDone: (deleted: boolean) => void }) {
  const { ids } = props;
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [projectId, setProjectId] = useState('');
  const [channelsOpen, setChannelsOpen] = useState(false);
  const n = ids.length;
  const noun = `${n} monitor${n === 1 ? '' : 's'}`;

  const run = async (verb: string, act: (id: string) => Promise<unknown>, deleted = false) => {
    setBusy(true);
    setNote('');
    setError(null);
    const failed = await each(ids, act);
    setBusy(false);
    const done = n - failed.length;
    if (failed.length) {
      setError(failed[0][1]);
      setNote(`${verb} ${done} of ${noun}; ${failed.length} failed.`);
    } else {
      setNote(`${verb} ${noun}.`);
    }
    props.onDone(deleted && failed.length === 0);
  };

  const addToProject = async () => {
    const p = props.projects.find((x) => x.id === projectId);
    if (!p) return;
    setBusy(true);
    setNote('');
    setError(null);
    try {
      const monitorIds = [...p.monitorIds, ...ids.filter((id) => !p.monitorIds.includes(id))];
      await call(api.PUT('/projects/{project_id}/monitors', { params: { path: { project_id: p.id } }, body: { monitorIds } }));
      setNote(`Added ${noun} to ${p.name}.`);
      props.onDone(false);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="bulkbar" role="toolbar" aria-label="Selected monitors">
      <strong>{noun} selected</strong>
      <button type="button" disabled={busy} onClick={() => run('Paused', (id) => call(api.POST('/monitors/{monitor_id}/pause', { params: { path: { monitor_id: id } } })))}>
        Pause
      </button>
      <button type="button" disabled={busy} onClick={() => run('Resumed', (id) => call(api.POST('/monitors/{monitor_id}/resume', { params: { path: { monitor_id: id } } })))}>
        Resume
      </button>
      <ConfirmButton
        label="Delete"
        subject={noun}
        question={`Delete ${noun} and their history?`}
        onConfirm={() => run('Deleted', (id) => call(api.DELETE('/monitors/{monitor_id}', { params: { path: { monitor_id: id } } })), true)}
      />
      {props.projects.length > 0 && (
        <span class="inline-field">
          <label for="bulk-project" class="sr-only">
            Project to add the selected monitors to
          </label>
          <select id="bulk-project" value={projectId} onChange={(e) => setProjectId((e.target as HTMLSelectElement).value)}>
            <option value="">Project…</option>
            {props.projects.map((p) => (
              <option value={p.id}>{p.name}</option>
            ))}
          </select>
          <button type="button" disabled={busy || !projectId} onClick={addToProject}>
            Add to project
          </button>
        </span>
      )}
      <button type="button" disabled={busy} aria-expanded={channelsOpen} onClick={() => setChannelsOpen((o) => !o)}>
        Set channels…
      </button>
      <button type="button" class="link" onClick={props.onClear}>
        Clear selection
      </button>
      {channelsOpen && (
        <ChannelPicker
          noun={noun}
          busy={busy}
          onApply={(channelIds) => {
            setChannelsOpen(false);
            // A partial update: absent fields stay as they are (the generated type lists them
            // all as required because they are nullable).
            run('Set the channels of', (id) =>
              call(api.PATCH('/monitors/{monitor_id}', { params: { path: { monitor_id: id } }, body: { notificationChannelIds: channelIds } as never })),
            );
          }}
        />
      )}
      {busy && <span aria-busy="true">Working…</span>}
      {note && (
        <span role="status" class="bulk-note">
          {note}
        </span>
      )}
      <ErrorNote error={error} />
    </div>
  );
}

/** The workspace's notification channels as checkboxes; applying replaces each selected
 *  monitor's own channels with the ticked ones. */
function ChannelPicker(props: { noun: string; busy: boolean; onApply: (ids: string[]) => void }) {
  const [channels, setChannels] = useState<Schemas['NotificationChannel'][] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [picked, setPicked] = useState<Set<string>>(new Set());
  useEffect(() => {
    call(api.GET('/notification-channels', { params: { query: { limit: 200 } } })).then((r) => setChannels(r.notificationChannels), setError);
  }, []);
  return (
    <fieldset class="channel-picker">
      <legend>Notification channels for {props.noun}</legend>
      <ErrorNote error={error} />
      {channels === null ? (
        !error && <p aria-busy="true">Loading channels…</p>
      ) : channels.length === 0 ? (
        <p>
          No notification channels yet: <Link href="/channels">add one</Link>.
        </p>
      ) : (
        channels.map((c) => (
          <label class="check">
            <input
              type="checkbox"
              checked={picked.has(c.id)}
              onChange={() =>
                setPicked((s) => {
                  const n = new Set(s);
                  if (n.has(c.id)) n.delete(c.id);
                  else n.add(c.id);
                  return n;
                })
              }
            />{' '}
            {c.name} <span class="muted">({c.type})</span>
          </label>
        ))
      )}
      <p class="hint">Replaces each monitor's own channels; none ticked removes them all.</p>
      <button type="button" class="primary" disabled={props.busy || channels === null} onClick={() => props.onApply([...picked])}>
        Apply to {props.noun}
      </button>
    </fieldset>
  );
}

interface RowProps {
  m: Monitor;
  live: Live;
  index: number;
  selected: boolean;
  current: boolean;
  /** Null where nothing can be done to a selection (a viewer's list): no checkbox. */
  onToggle: ((id: string) => void) | null;
}

/** One row of the list, redrawn only when its monitor, its checks, its place or its selection
 *  changed: a frame of live results touches the few rows whose checks moved. */
class Row extends Component<RowProps> {
  shouldComponentUpdate(n: RowProps) {
    const p = this.props;
    return n.m !== p.m || n.live !== p.live || n.index !== p.index || n.selected !== p.selected || n.current !== p.current || n.onToggle !== p.onToggle;
  }

  render({ m, live: l, index, selected, current, onToggle }: RowProps) {
    return (
      <div
        role="listitem"
        class={`vrow${current ? ' current' : ''}${selected ? ' selected' : ''}`}
        data-monitor-id={m.id}
        data-index={index}
        style={{ transform: `translateY(${index * ROW}px)` }}
      >
        {onToggle ? (
          <input type="checkbox" class="pick" aria-label={`Select ${m.name}`} checked={selected} onChange={() => onToggle(m.id)} />
        ) : (
          <span class="pick" />
        )}
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
        <BeatBar beats={l.beats} slots={SLOTS} />
        <span class="num uptime24">
          <span class="sr-only">24-hour uptime </span>
          {pct(l.uptime)}
        </span>
        <span class="num latency">
          <span class="sr-only">Response time </span>
          {/* A push carries no response time: its 0 would read as a very fast check. */}
          {m.type === 'PUSH' ? '—' : ms(l.latency)}
        </span>
      </div>
    );
  }
}

function VirtualRows(props: {
  rows: Monitor[];
  data: RowData;
  selected: Set<string>;
  active: number;
  onToggle: ((id: string) => void) | null;
}) {
  const { rows, data, selected, active } = props;
  const box = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  // Redrawn when results arrive for a monitor in view; results for the other rows wait in
  // the store until those rows scroll in.
  const [, redraw] = useState(0);
  const inView = useRef<Monitor[]>([]);
  useEffect(
    () =>
      data.subscribe((changed) => {
        if (!changed || inView.current.some((m) => changed.has(m.id))) redraw((n) => n + 1);
      }),
    [data],
  );
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight || 600);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  // `j`/`k`: bring the current row into view, then give its link the focus.
  useEffect(() => {
    const el = box.current;
    if (!el || active < 0) return;
    const y = active * ROW;
    if (y < el.scrollTop) el.scrollTop = y;
    else if (y + ROW > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW - el.clientHeight;
    setTop(el.scrollTop);
    requestAnimationFrame(() => el.querySelector<HTMLAnchorElement>(`[data-index="${active}"] a.name`)?.focus());
  }, [active]);
  const first = Math.max(0, Math.floor(top / ROW) - 5);
  const last = Math.min(rows.length, Math.ceil((top + height) / ROW) + 5);
  const slice = rows.slice(first, last);
  inView.current = slice;
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
          <Row
            key={m.id}
            m={m}
            live={data.get(m.id)}
            index={first + i}
            selected={selected.has(m.id)}
            current={first + i === active}
            onToggle={props.onToggle}
          />
        ))}
      </div>
    </div>
  );
}

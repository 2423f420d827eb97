// One monitor: status, uptime over 24 h / 7 d / 30 d / 90 d, the heartbeat bar of the last
// checks, the response-time chart over a picked range (1 h and 24 h: the raw checks of the
// range with their hourly medians, and the hourly rollups' average and p95 for 24 h; 7, 30 and
// 90 days: the rollups with the recent raw checks and their medians, which the rollups do not
// carry), a push monitor's URL (regenerated and shown once), the recent checks with timings,
// assertion results and region, the status-change timeline, the escalation policy and projects
// it is in, and the actions: pause or resume, check now, edit, delete (none of them, nor the
// push URL's regeneration, for a viewer: role.ts). Updates arrive live.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, call, type Monitor, type Schemas } from '../api/client';
import { ago, dateZone, ms, pct, when } from '../format';
import { onLive } from '../live';
import { canWrite } from '../role';
import { Link, navigate } from '../router';
import { BeatBar } from '../beats';
import { ConfirmButton } from '../confirm';
import { PushUrl } from '../push-url';
import { Badge, ErrorNote, useLoad } from '../ui';

type Heartbeat = Schemas['Heartbeat'];
type Hourly = Schemas['HourlyStat'];

interface Data {
  monitor: Monitor;
  uptime: Schemas['Uptime'];
  beats: Heartbeat[];
  events: Schemas['MonitorEvent'][];
}

/** Raw checks fetched for the chart and the table. */
const RECENT = 200;

const HOUR = 3600;

/** The median response time of each hour the raw checks cover, keyed by the hour's start (in
 *  seconds, as the rollups' buckets), over the checks that were not DOWN (as the rollups'
 *  latency figures). When the fetch was cut at its limit, the oldest hour may be only partly
 *  there, so it is left out rather than drawn from a few of its checks. */
function hourlyMedians(beats: Heartbeat[], limit: number): Map<number, number> {
  const byHour = new Map<number, number[]>();
  let oldest = Infinity;
  for (const b of beats) {
    const t = Math.floor(Date.parse(b.createdAt) / 1000);
    oldest = Math.min(oldest, t);
    if (b.status === 'DOWN') continue;
    const hour = t - (t % HOUR);
    const xs = byHour.get(hour);
    if (xs) xs.push(b.latency);
    else byHour.set(hour, [b.latency]);
  }
  const partial = beats.length >= limit ? oldest - (oldest % HOUR) : null;
  const out = new Map<number, number>();
  for (const [hour, xs] of byHour) {
    if (hour === partial) continue;
    xs.sort((a, b) => a - b);
    const m = xs.length >> 1;
    out.set(hour, xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2);
  }
  return out;
}

async function loadAll(id: string): Promise<Data> {
  const path = { monitor_id: id };
  const [monitor, uptime, beats, events] = await Promise.all([
    call(api.GET('/monitors/{monitor_id}', { params: { path } })),
    call(api.GET('/monitors/{monitor_id}/uptime', { params: { path } })),
    call(api.GET('/monitors/{monitor_id}/heartbeats', { params: { path, query: { limit: RECENT } } })),
    call(api.GET('/monitors/{monitor_id}/events', { params: { path } })),
  ]);
  return { monitor, uptime, beats, events };
}

/** The chart's ranges: how far back, and whether the raw checks of the whole range are drawn
 *  (the short ones) or only the recent ones beside the hourly rollups (the long ones). */
const RANGES = [
  { key: '1h', label: '1 h', seconds: HOUR, raw: true },
  { key: '24h', label: '24 h', seconds: 24 * HOUR, raw: true },
  { key: '7d', label: '7 d', seconds: 7 * 24 * HOUR, raw: false },
  { key: '30d', label: '30 d', seconds: 30 * 24 * HOUR, raw: false },
  { key: '90d', label: '90 d', seconds: 90 * 24 * HOUR, raw: false },
] as const;
type Range = (typeof RANGES)[number];

/** The most raw checks one request returns. */
const RAW_LIMIT = 1000;

interface ChartData {
  range: Range;
  /** Seconds since the epoch: where the range starts and ends. */
  from: number;
  to: number;
  hourly: Hourly[];
  beats: Heartbeat[];
}

async function loadChart(id: string, range: Range, recent: Heartbeat[]): Promise<ChartData> {
  const path = { monitor_id: id };
  const to = Date.now() / 1000;
  const from = to - range.seconds;
  const fromIso = new Date(from * 1000).toISOString();
  const [hourly, beats] = await Promise.all([
    // An hour is one rollup bucket at most: the raw checks say more.
    range.seconds > HOUR
      ? call(api.GET('/monitors/{monitor_id}/stats/hourly', { params: { path, query: { from: fromIso } } }))
      : Promise.resolve([] as Hourly[]),
    range.raw
      ? call(api.GET('/monitors/{monitor_id}/heartbeats', { params: { path, query: { from: fromIso, limit: RAW_LIMIT } } }))
      : Promise.resolve(recent),
  ]);
  return { range, from, to, hourly, beats };
}

/** One line naming the monitor's escalation policy and projects, fetched only when it has any. */
function Routing({ monitor: m }: { monitor: Monitor }) {
  const policy = m.escalationPolicyId;
  const ids = m.projectIds;
  // Keyed by the ids, so the live reloads of the monitor do not refetch the names.
  const names = useLoad(async () => {
    const [policies, projects] = await Promise.all([
      policy ? call(api.GET('/escalation-policies')) : Promise.resolve([]),
      ids.length ? call(api.GET('/projects')) : Promise.resolve([]),
    ]);
    return {
      policy: policies.find((p) => p.id === policy)?.name ?? policy,
      projects: ids.map((id) => projects.find((p) => p.id === id)?.name ?? id),
    };
  }, [policy, ids.join(',')]);
  if (!policy && !ids.length) return null;
  const n = names.data;
  return (
    <p class="muted" data-testid="monitor-routing">
      {policy && <>Escalation policy: <Link href="/escalation">{n?.policy ?? '…'}</Link></>}
      {policy && ids.length > 0 && ' · '}
      {ids.length > 0 && <>Project{ids.length === 1 ? '' : 's'}: {n ? n.projects.join(', ') : '…'}</>}
    </p>
  );
}

/** What the monitor depends on and what depends on it (`dependsOn`), fetched only when the
 * workspace has dependencies at all. */
function Dependencies({ monitor: m }: { monitor: Monitor }) {
  const deps = m.dependsOn ?? [];
  const all = useLoad(() => call(api.GET('/monitors')), [m.id, deps.join(',')]);
  const list = all.data ?? [];
  const name = (id: string) => list.find((x) => x.id === id)?.name ?? id;
  const dependents = list.filter((x) => (x.dependsOn ?? []).includes(m.id));
  if (!deps.length && !dependents.length) return null;
  const links = (ids: string[]) =>
    ids.map((id, i) => (
      <>
        {i > 0 && ', '}
        <Link href={`/monitors/${id}`}>{name(id)}</Link>
      </>
    ));
  return (
    <p class="muted" data-testid="monitor-dependencies">
      {deps.length > 0 && <>Depends on: {links(deps)}</>}
      {deps.length > 0 && dependents.length > 0 && ' · '}
      {dependents.length > 0 && <>Dependents: {links(dependents.map((x) => x.id))}</>}
    </p>
  );
}

export function MonitorDetail({ id }: { id: string }) {
  const [data, setData] = useState<Data | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');

  const reload = () =>
    loadAll(id).then(
      (d) => {
        setData(d);
        setError(null);
      },
      setError,
    );

  useEffect(() => {
    setData(null);
    reload();
    let pending: number | undefined;
    const off = onLive((kind, ev) => {
      const mine = ev?.monitorId === id || ev?.id === id;
      if (kind === 'monitor' && mine) {
        setData((d) => (d ? { ...d, monitor: { ...d.monitor, status: ev.status } } : d));
      }
      if (kind === 'poll' || ((kind === 'heartbeat' || kind === 'monitor' || kind === 'monitor.changed') && mine)) {
        clearTimeout(pending);
        pending = window.setTimeout(reload, kind === 'heartbeat' ? 500 : 0);
      }
    });
    return () => {
      off();
      clearTimeout(pending);
    };
  }, [id]);

  if (error && !data) {
    return (
      <main id="main">
        <ErrorNote error={error} />
        <Link href="/">Back to monitors</Link>
      </main>
    );
  }
  if (!data) return <main id="main" aria-busy="true">Loading…</main>;
  const { monitor: m, uptime, beats, events } = data;
  const path = { monitor_id: id };

  const act = async (what: 'pause' | 'resume' | 'check') => {
    setNote('');
    try {
      if (what === 'pause') await call(api.POST('/monitors/{monitor_id}/pause', { params: { path } }));
      if (what === 'resume') await call(api.POST('/monitors/{monitor_id}/resume', { params: { path } }));
      if (what === 'check') {
        await call(api.POST('/monitors/{monitor_id}/check', { params: { path } }));
        setNote('Check started; its result appears below in a moment.');
      }
      reload();
    } catch (e) {
      setError(e);
    }
  };
  const remove = async () => {
    if (!confirm(`Delete the monitor “${m.name}” and its history?`)) return;
    try {
      await call(api.DELETE('/monitors/{monitor_id}', { params: { path } }));
      navigate('/');
    } catch (e) {
      setError(e);
    }
  };

  return (
    <main id="main">
      <p>
        <Link href="/">← Monitors</Link>
      </p>
      <div class="title-row">
        <h1>
          {m.name} <Badge status={m.active ? m.status : 'PAUSED'} />
        </h1>
        {canWrite() && (
          <div class="actions">
            {m.active ? (
              <button type="button" onClick={() => act('pause')}>Pause</button>
            ) : (
              <button type="button" onClick={() => act('resume')}>Resume</button>
            )}
            <button type="button" onClick={() => act('check')}>Check now</button>
            <Link class="button" href={`/monitors/${id}/edit`}>Edit</Link>
            <button type="button" class="danger" onClick={remove}>Delete</button>
          </div>
        )}
      </div>
      <p class="muted">
        {m.type} · {m.url ?? (m.host ? `${m.host}${m.port ? `:${m.port}` : ''}` : 'push')} · every {m.interval}s · last check{' '}
        {ago(m.lastCheckAt)}
      </p>
      {m.flappingSince && (
        <p class="notice" role="status" data-testid="flapping">
          Flapping since <time dateTime={m.flappingSince}>{when(m.flappingSince)}</time>: its changes page nobody
          until it settles.
        </p>
      )}
      <Routing monitor={m} />
      <Dependencies monitor={m} />
      <ErrorNote error={error} />
      {note && <p class="notice" role="status">{note}</p>}
      <section aria-labelledby="uptime-h">
        <h2 id="uptime-h">Uptime</h2>
        <dl class="uptime">
          {(['24h', '7d', '30d', '90d'] as const).map((k) => (
            <div>
              <dt>{k}</dt>
              <dd>{pct(uptime[k])}</dd>
            </div>
          ))}
        </dl>
        <Bars beats={beats} />
      </section>
      <section aria-labelledby="chart-h">
        <h2 id="chart-h">Response time</h2>
        <RangeChart id={id} recent={beats} />
      </section>
      {m.type === 'PUSH' && <PushSection id={id} interval={m.interval} />}
      <section aria-labelledby="beats-h">
        <h2 id="beats-h">Recent checks</h2>
        {beats.length === 0 ? (
          <p>
            No checks yet. The first one runs within {m.interval} seconds{canWrite() ? '; “Check now” runs one at once' : ''}.
          </p>
        ) : (
          <div class="table-wrap">
            <table class="beats">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">Status</th>
                  <th scope="col">Latency</th>
                  <th scope="col">Timings (DNS / TCP / TLS / first byte)</th>
                  <th scope="col">Region</th>
                  <th scope="col">Message and assertions</th>
                </tr>
              </thead>
              <tbody>
                {beats.slice(0, 50).map((b) => (
                  <tr>
                    <td>{when(b.createdAt)}</td>
                    <td>
                      <Badge status={b.status} />
                      {b.statusCode != null && <span class="muted"> {b.statusCode}</span>}
                    </td>
                    <td>{ms(b.latency)}</td>
                    <td class="muted">
                      {b.timings
                        ? `${ms(b.timings.dns)} / ${ms(b.timings.tcp)} / ${ms(b.timings.tls)} / ${ms(b.timings.firstByte)}`
                        : '—'}
                    </td>
                    <td>{b.region}</td>
                    <td>
                      {b.message}
                      {b.assertionResults?.length ? (
                        <ul class="asserts">
                          {b.assertionResults.map((a) => (
                            <li class={a.passed ? 'ok' : 'bad'}>
                              {a.passed ? '✓' : '✗'} {a.message}
                              {a.actual != null && <span class="muted"> (got {a.actual})</span>}
                            </li>
                          ))}
                        </ul>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section aria-labelledby="events-h">
        <h2 id="events-h">Status changes</h2>
        {events.length === 0 ? (
          <p>No status change yet.</p>
        ) : (
          <ol class="timeline">
            {[...events].reverse().slice(0, 100).map((e) => (
              <li>
                <time dateTime={e.createdAt}>{when(e.createdAt)}</time> <Badge status={e.from} /> → <Badge status={e.to} />{' '}
                {e.message && <span class="muted">{e.message}</span>}
              </li>
            ))}
          </ol>
        )}
      </section>
    </main>
  );
}

/** A push monitor's URL: its token is stored hashed, so the page cannot show it; regenerating
 *  issues a new one (the old one stops at once) and shows it this once. */
function PushSection({ id, interval }: { id: string; interval: number }) {
  const [token, setToken] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const regenerate = async () => {
    setError(null);
    try {
      const r = await call(api.POST('/monitors/{monitor_id}/regenerate-push-token', { params: { path: { monitor_id: id } } }));
      setToken(r.pushToken);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <section aria-labelledby="push-h">
      <h2 id="push-h">Push URL</h2>
      <ErrorNote error={error} />
      {token ? (
        <PushUrl token={token} interval={interval} />
      ) : canWrite() ? (
        <p>
          The push URL holds a secret token that is shown only when it is issued. If it is lost, or leaked, regenerate it: the
          old URL stops working at once, so update your job with the new one.
        </p>
      ) : (
        <p>The push URL holds a secret token that is shown only when it is issued, to the people who can change this monitor.</p>
      )}
      {canWrite() && (
        <ConfirmButton
          label={token ? 'Regenerate again' : 'Regenerate push URL'}
          subject=""
          question="Stop the current push URL and issue a new one?"
          onConfirm={regenerate}
        />
      )}
    </section>
  );
}

/** The last 60 checks as a heartbeat bar, oldest first. */
function Bars({ beats }: { beats: Heartbeat[] }) {
  const last = useMemo(
    () => beats.slice(0, 60).reverse().map((b) => ({ status: b.status, latency: b.latency, at: b.createdAt })),
    [beats],
  );
  if (!last.length) return null;
  return (
    <div class="detail-bars">
      <BeatBar beats={last} slots={last.length} />
    </div>
  );
}

/** The range picker over the chart; the chart's data is fetched again when the range
 *  changes or the monitor's recent checks do (live). */
function RangeChart({ id, recent }: { id: string; recent: Heartbeat[] }) {
  const [range, setRange] = useState<Range>(RANGES[2]);
  const [data, setData] = useState<ChartData | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    loadChart(id, range, recent).then(
      (d) => {
        if (live) {
          setData(d);
          setError(null);
        }
      },
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [id, range, recent]);
  return (
    <>
      <div class="tabs" role="group" aria-label="Chart range">
        {RANGES.map((r) => (
          <button type="button" aria-pressed={r.key === range.key} onClick={() => setRange(r)}>
            {r.label}
          </button>
        ))}
      </div>
      <ErrorNote error={error} />
      {data ? <Chart data={data} /> : <div class="chart" aria-busy="true" />}
    </>
  );
}

const SPAN_WORDS: Record<string, string> = {
  '1h': 'the last hour',
  '24h': 'the last 24 hours',
  '7d': 'the last 7 days',
  '30d': 'the last 30 days',
  '90d': 'the last 90 days',
};

function Chart({ data: { range, from, to, hourly, beats } }: { data: ChartData }) {
  const box = useRef<HTMLDivElement>(null);
  const medians = useMemo(() => hourlyMedians(beats, range.raw ? RAW_LIMIT : RECENT), [beats, range]);
  // The time axis and the legend's times are in the zone every other date is shown in.
  const zone = dateZone.value;
  // The chart's colours are read from the page's when drawn: drawn again when the colour
  // scheme changes, or a dark page keeps light-scheme axes.
  const [scheme, setScheme] = useState(0);
  useEffect(() => {
    const mq = window.matchMedia('(prefers-color-scheme: dark)');
    const redraw = () => setScheme((n) => n + 1);
    mq.addEventListener('change', redraw);
    return () => mq.removeEventListener('change', redraw);
  }, []);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    // One time axis: hourly points (average, median, p95) and raw points, each series null
    // where it has no value.
    type Row = [number | null, number | null, number | null, number | null];
    const points = new Map<number, Row>();
    const at = (t: number): Row => {
      const p = points.get(t) ?? [null, null, null, null];
      points.set(t, p);
      return p;
    };
    for (const h of hourly) {
      const p = at(Date.parse(h.bucket) / 1000);
      p[0] = h.avgLatency;
      p[2] = h.p95Latency;
    }
    for (const [hour, median] of medians) at(hour)[1] = median;
    for (const b of beats) {
      const t = Date.parse(b.createdAt) / 1000;
      if (t >= from) at(t)[3] = b.latency;
    }
    const xs = [...points.keys()].sort((a, b) => a - b);
    const data: uPlot.AlignedData = [xs, ...[0, 1, 2, 3].map((i) => xs.map((x) => points.get(x)![i]))];
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue('--fg').trim() || '#222';
    const grid = css.getPropertyValue('--line').trim() || '#ddd';
    const axis = { stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid } };
    const plot = new uPlot(
      {
        width: el.clientWidth || 600,
        height: 240,
        tzDate: (ts) => {
          try {
            return uPlot.tzDate(new Date(ts * 1e3), zone);
          } catch {
            return new Date(ts * 1e3);
          }
        },
        // The axis spans the range, from its first point on: a monitor younger than the
        // range is not squeezed against the right edge.
        scales: { x: { time: true, range: () => [Math.max(from, (xs[0] ?? from) - 60), to] } },
        // Time labels such as "10:01pm" are about 60 px wide: ticks at least 80 px apart keep
        // them from running into each other (uPlot's default is 50).
        axes: [{ ...axis, label: `Time (${zone})`, labelSize: 24, space: 80 }, { ...axis, label: 'ms', size: 60 }],
        series: [
          {},
          { label: 'Hourly average', stroke: '#3b82f6', width: 2, spanGaps: true },
          { label: 'Hourly median (recent checks)', stroke: '#8b5cf6', width: 2, spanGaps: true },
          { label: 'Hourly p95', stroke: '#f59e0b', width: 2, spanGaps: true },
          { label: 'Checks', stroke: '#10b981', width: 1, spanGaps: true, points: { show: true, size: 3 } },
        ],
      },
      data,
      el,
    );
    const ro = new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 600, height: 240 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [hourly, beats, medians, from, to, zone, scheme]);
  if (!hourly.length && !beats.some((b) => Date.parse(b.createdAt) / 1000 >= from)) {
    return <p data-range={range.key}>No checks in {SPAN_WORDS[range.key]} to chart.</p>;
  }
  return (
    <div
      class="chart"
      ref={box}
      role="img"
      aria-label={`Response time over ${SPAN_WORDS[range.key]}`}
      data-range={range.key}
      data-zone={zone}
      data-median-hours={medians.size}
    />
  );
}

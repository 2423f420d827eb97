// Maintenance windows: the list (when, in the window's own time zone and in words, with the
// next starts of a recurring one) and one form to plan or edit a window over any number of
// monitors. The API keeps one window per monitor: the form writes one per monitor chosen, and
// the list shows the windows planned together (same title, words, schedule and uptime choice)
// as one, editing them together (changed in place, created for monitors added, deleted for
// monitors taken out). During a window a monitor's failures do not alert. A viewer gets the
// list alone (role.ts).
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { canWrite } from '../role';
import { fromLocalInput, inWords, lengthInWords, localInput, nextStarts, parseCron, wallOf } from '../cron';
import { Empty, ErrorNote, Field, useLoad } from '../ui';

type Window = Schemas['MaintenanceWindow'];
type Recurring = Schemas['MaintenanceRecurring'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

function inZone(iso: string, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone }).format(new Date(iso));
  } catch {
    return iso;
  }
}

function timeOf(iso: string, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, { timeStyle: 'short', timeZone }).format(new Date(iso));
  } catch {
    return iso;
  }
}

/** The window's schedule in words, read in its own time zone. */
export function describe(w: Window): string {
  const r = w.recurring as Recurring | null;
  const from = timeOf(w.startsAt, w.timezone);
  const to = timeOf(w.endsAt, w.timezone);
  if (!r) return `Once, ${inZone(w.startsAt, w.timezone)} to ${inZone(w.endsAt, w.timezone)} (${w.timezone})`;
  switch (r.frequency) {
    case 'daily':
      return `Every day, ${from} to ${to} (${w.timezone})`;
    case 'weekly':
      return `Every ${DAYS[r.dayOfWeek ?? 0]}, ${from} to ${to} (${w.timezone})`;
    case 'monthly':
      return `Monthly on day ${r.dayOfMonth}, ${from} to ${to} (${w.timezone})`;
    default:
      return `On the schedule “${r.expression}” (${w.timezone}), ${lengthInWords(Date.parse(w.endsAt) - Date.parse(w.startsAt))} each`;
  }
}

/** The cron expression a schedule amounts to (daily, weekly and monthly at the start's
 *  wall-clock time), or null for a one-off window. */
function asCron(r: Recurring | null, startsAt: string, timeZone: string): string | null {
  if (!r) return null;
  if (r.frequency === 'cron') return r.expression ?? null;
  let wall: Date;
  try {
    wall = new Date(wallOf(Date.parse(startsAt), timeZone));
  } catch {
    return null;
  }
  const at = `${wall.getUTCMinutes()} ${wall.getUTCHours()}`;
  if (r.frequency === 'daily') return `${at} * * *`;
  if (r.frequency === 'weekly') return `${at} * * ${r.dayOfWeek ?? 0}`;
  return `${at} ${r.dayOfMonth ?? 1} * *`;
}

/** The next `n` starts in words, or null when the preview cannot read the schedule. */
export function upcoming(r: Recurring | null, startsAt: string, endsAt: string, timeZone: string, n = 3): string[] | null {
  const length = Date.parse(endsAt) - Date.parse(startsAt);
  if (Number.isNaN(length)) return null;
  const from = Math.max(Date.now(), Date.parse(startsAt));
  if (!r) return Date.parse(endsAt) > Date.now() ? [inWords(Date.parse(startsAt), timeZone)] : [];
  const expr = asCron(r, startsAt, timeZone);
  const cron = expr ? parseCron(expr) : null;
  if (!cron) return null;
  try {
    return nextStarts(cron, timeZone, from, n).map((t) => inWords(t, timeZone));
  } catch {
    return null;
  }
}

interface Group {
  key: string;
  windows: Window[];
  first: Window;
}

function groupOf(w: Window): string {
  return JSON.stringify([w.title, w.description, w.startsAt, w.endsAt, w.timezone, w.recurring, w.excludeFromUptime]);
}

function groups(ws: Window[]): Group[] {
  const out = new Map<string, Group>();
  for (const w of ws) {
    const k = groupOf(w);
    const g = out.get(k);
    if (g) g.windows.push(w);
    else out.set(k, { key: k, windows: [w], first: w });
  }
  return [...out.values()];
}

/** The next whole minute from now, plus `after` ms, as an ISO instant. */
function nextMinute(after: number): string {
  return new Date(Math.ceil((Date.now() + 1) / 60_000) * 60_000 + after).toISOString();
}

type Freq = '' | 'daily' | 'weekly' | 'monthly' | 'cron';

const ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    return [];
  }
})();

function WindowForm(props: {
  monitors: Schemas['Monitor'][];
  editing: Group | null;
  onDone: () => void;
  onCancel: () => void;
}) {
  const w = props.editing?.first;
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  const [zone, setZone] = useState(w?.timezone ?? browserZone);
  const [freq, setFreq] = useState<Freq>(((w?.recurring as Recurring | null)?.frequency as Freq) ?? '');
  const [expression, setExpression] = useState((w?.recurring as Recurring | null)?.expression ?? '');
  // A new window starts at the next whole minute and lasts an hour, so the common case (now,
  // for a while) needs no date typed.
  const [starts, setStarts] = useState(() => (w ? localInput(w.startsAt, w.timezone) : localInput(nextMinute(0), browserZone)));
  const [ends, setEnds] = useState(() => (w ? localInput(w.endsAt, w.timezone) : localInput(nextMinute(3_600_000), browserZone)));
  const [chosen, setChosen] = useState<Set<string>>(new Set(props.editing?.windows.map((x) => x.monitorId) ?? []));
  const [filter, setFilter] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const startIso = fromLocalInput(starts, zone);
  const endIso = fromLocalInput(ends, zone);
  const recurring = (): Schemas['MaintenanceRecurringInput'] | null => {
    if (!freq) return null;
    const r: Schemas['MaintenanceRecurringInput'] = { frequency: freq as Schemas['Frequency'] };
    let wall: Date | null = null;
    try {
      wall = startIso ? new Date(wallOf(Date.parse(startIso), zone)) : null;
    } catch {
      // An unknown zone: the server names the field when the form is sent.
    }
    if (freq === 'weekly') r.dayOfWeek = wall?.getUTCDay() ?? 0;
    if (freq === 'monthly') r.dayOfMonth = wall?.getUTCDate() ?? 1;
    if (freq === 'cron') r.expression = expression.trim();
    return r;
  };
  let preview: string[] | null = null;
  if (startIso && endIso) {
    try {
      preview = upcoming(recurring() as Recurring | null, startIso, endIso, zone);
    } catch {
      preview = null;
    }
  }

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    setError(null);
    if (chosen.size === 0) {
      setError(new Error('Choose at least one monitor.'));
      return;
    }
    const description = String(f.get('description') ?? '').trim();
    const fields = {
      title: String(f.get('title')),
      description: description || null,
      startsAt: startIso,
      endsAt: endIso,
      timezone: zone.trim() || 'UTC',
      recurring: recurring(),
      excludeFromUptime: f.get('excludeFromUptime') === 'on',
    };
    setBusy(true);
    try {
      const existing = new Map((props.editing?.windows ?? []).map((x) => [x.monitorId, x]));
      // The kept and added monitors first, so that a refused schedule changes nothing.
      for (const id of chosen) {
        const old = existing.get(id);
        if (old) {
          await call(api.PATCH('/maintenance-windows/{window_id}', { params: { path: { window_id: old.id } }, body: fields }));
        } else {
          await call(api.POST('/maintenance-windows', { body: { ...fields, monitorId: id } }));
        }
      }
      for (const [id, old] of existing) {
        if (!chosen.has(id)) {
          await call(api.DELETE('/maintenance-windows/{window_id}', { params: { path: { window_id: old.id } } }));
        }
      }
      props.onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const toggle = (id: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) next.add(id);
    else next.delete(id);
    setChosen(next);
  };
  const shown = props.monitors.filter((m) => !filter || m.name.toLowerCase().includes(filter.toLowerCase()));
  return (
    <form class="card form" onSubmit={submit} aria-labelledby="mw-heading">
      <h2 id="mw-heading">{w ? `Edit “${w.title}”` : 'Plan a window'}</h2>
      <ErrorNote error={error} />
      <fieldset class={`monitor-pick${fe('monitorId') ? ' has-error' : ''}`}>
        <legend>
          Monitors <span class="muted">({chosen.size} chosen)</span>
        </legend>
        {props.monitors.length > 8 && (
          <input
            type="search"
            aria-label="Filter monitors"
            placeholder="Filter monitors"
            value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
        )}
        <div class="picklist">
          {shown.map((m) => (
            <label class="check">
              <input type="checkbox" checked={chosen.has(m.id)} onChange={(e) => toggle(m.id, (e.target as HTMLInputElement).checked)} />{' '}
              {m.name}
            </label>
          ))}
        </div>
        {fe('monitorId') && <small class="error" role="alert">{fe('monitorId')}</small>}
      </fieldset>
      <Field label="Title" id="mw-title" error={fe('title')}>
        <input id="mw-title" name="title" required defaultValue={w?.title} />
      </Field>
      <Field label="Description (optional)" id="mw-desc" error={fe('description')}>
        <textarea id="mw-desc" name="description" rows={2} defaultValue={w?.description ?? ''} />
      </Field>
      <div class="grid3">
        <Field label="Starts" id="mw-start" error={fe('startsAt')} hint="In the window's time zone.">
          <input id="mw-start" name="startsAt" type="datetime-local" required value={starts} onInput={(e) => setStarts((e.target as HTMLInputElement).value)} />
        </Field>
        <Field label="Ends" id="mw-end" error={fe('endsAt')} hint={freq ? 'The first occurrence’s end: each lasts as long.' : undefined}>
          <input id="mw-end" name="endsAt" type="datetime-local" required value={ends} onInput={(e) => setEnds((e.target as HTMLInputElement).value)} />
        </Field>
        <Field label="Time zone" id="mw-zone" error={fe('timezone')}>
          <input id="mw-zone" name="timezone" list="mw-zones" value={zone} onInput={(e) => setZone((e.target as HTMLInputElement).value)} />
          <datalist id="mw-zones">
            {ZONES.map((z) => (
              <option value={z} />
            ))}
          </datalist>
        </Field>
      </div>
      <Field label="Repeats" id="mw-freq" error={fe('recurring') ?? fe('recurring.frequency')}>
        <select id="mw-freq" value={freq} onChange={(e) => setFreq((e.target as HTMLSelectElement).value as Freq)}>
          <option value="">Never (one-off)</option>
          <option value="daily">Every day</option>
          <option value="weekly">Every week, on the start's weekday</option>
          <option value="monthly">Every month, on the start's day</option>
          <option value="cron">On a cron schedule</option>
        </select>
      </Field>
      {freq === 'cron' && (
        <Field
          label="Cron expression"
          id="mw-cron"
          error={fe('recurring.expression')}
          hint="Five fields (minute hour day-of-month month day-of-week), read in the window's time zone: 0 2 * * 0 is Sundays at 02:00."
        >
          <input id="mw-cron" value={expression} required maxLength={100} onInput={(e) => setExpression((e.target as HTMLInputElement).value)} />
        </Field>
      )}
      <div class="field">
        <label class="check">
          <input type="checkbox" name="excludeFromUptime" defaultChecked={w?.excludeFromUptime ?? false} /> Exclude from uptime
        </label>
        <small class="hint">Checks inside the window then count in no uptime figure or report.</small>
      </div>
      {startIso && endIso && (
        <div class="next-starts" aria-live="polite">
          <h3>{freq ? 'Next occurrences' : 'When'}</h3>
          {preview === null ? (
            <p class="muted">The server checks this schedule when it is saved.</p>
          ) : preview.length === 0 ? (
            <p class="muted">No occurrence is still ahead.</p>
          ) : (
            <ul>
              {preview.map((p) => (
                <li>
                  {p}, for {lengthInWords(Date.parse(endIso) - Date.parse(startIso))}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {w ? 'Save window' : 'Plan window'}
        </button>
        {w && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

export function Maintenance() {
  const windows = useLoad(() => call(api.GET('/maintenance-windows')), []);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);
  const [editing, setEditing] = useState<Group | null>(null);
  const [formKey, setFormKey] = useState(0);
  const [error, setError] = useState<unknown>(null);

  const remove = async (g: Group) => {
    try {
      for (const w of g.windows) {
        await call(api.DELETE('/maintenance-windows/{window_id}', { params: { path: { window_id: w.id } } }));
      }
      if (editing?.key === g.key) setEditing(null);
      windows.reload();
    } catch (err) {
      setError(err);
    }
  };
  const names = Object.fromEntries((monitors.data ?? []).map((m) => [m.id, m.name]));
  const list = groups(windows.data ?? []);
  const writer = canWrite();
  const done = () => {
    setEditing(null);
    setFormKey((k) => k + 1);
    windows.reload();
  };
  return (
    <main id="main">
      <h1>Maintenance windows</h1>
      <ErrorNote error={windows.error ?? error} />
      {windows.data && windows.data.length === 0 && (
        <Empty title="No maintenance windows">
          <p>
            {writer
              ? "Plan a window before planned work: the monitors' failures during it do not alert anyone."
              : "During a maintenance window, the monitors' failures do not alert anyone."}
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <ul class="cards">
          {list.map((g) => {
            const w = g.first;
            const next = w.recurring ? upcoming(w.recurring as Recurring, w.startsAt, w.endsAt, w.timezone, 1) : null;
            return (
              <li class="card" data-window-id={w.id}>
                <div class="title-row">
                  <h2>{w.title}</h2>
                  {writer && (
                    <div class="actions">
                      <button
                        type="button"
                        aria-label={`Edit ${w.title}`}
                        onClick={() => {
                          setEditing(g);
                          setFormKey((k) => k + 1);
                        }}
                      >
                        Edit
                      </button>
                      <button type="button" class="danger" onClick={() => remove(g)} aria-label={`Delete ${w.title}`}>
                        Delete
                      </button>
                    </div>
                  )}
                </div>
                <p>{describe(w)}</p>
                {next && next.length > 0 && <p class="muted">Next: {next[0]}</p>}
                {w.description && <p>{w.description}</p>}
                <p class="muted">
                  {g.windows.length === 1 ? 'Monitor' : `${g.windows.length} monitors`}:{' '}
                  {g.windows.map((x) => names[x.monitorId] ?? x.monitorId).join(', ')}
                  {w.excludeFromUptime ? ' · excluded from uptime' : ''}
                </p>
              </li>
            );
          })}
        </ul>
      )}
      {writer && monitors.data && (
        <WindowForm
          key={formKey}
          monitors={monitors.data}
          editing={editing}
          onDone={done}
          onCancel={() => {
            setEditing(null);
            setFormKey((k) => k + 1);
          }}
        />
      )}
    </main>
  );
}

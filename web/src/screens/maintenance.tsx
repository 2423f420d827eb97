// Maintenance windows: the list (when, in the window's own time zone and in words for a
// recurring one) and a create form; delete. During a window a monitor's failures do not alert.
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { Empty, ErrorNote, Field, useLoad } from '../ui';

type Window = Schemas['MaintenanceWindow'];
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
  const r = w.recurring as Schemas['MaintenanceRecurring'] | null;
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
      return `On the schedule “${r.expression}” (${w.timezone})`;
  }
}

export function Maintenance() {
  const windows = useLoad(() => call(api.GET('/maintenance-windows')), []);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);
  const [freq, setFreq] = useState('');
  const [error, setError] = useState<unknown>(null);
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    setError(null);
    const iso = (v: FormDataEntryValue | null) => (v ? new Date(String(v)).toISOString() : '');
    let recurring: Schemas['MaintenanceRecurringInput'] | null = null;
    if (freq) {
      const start = new Date(String(f.get('startsAt') ?? ''));
      recurring = { frequency: freq as Schemas['Frequency'] };
      if (freq === 'weekly') recurring.dayOfWeek = start.getDay();
      if (freq === 'monthly') recurring.dayOfMonth = start.getDate();
    }
    try {
      await call(
        api.POST('/maintenance-windows', {
          body: {
            monitorId: String(f.get('monitorId')),
            title: String(f.get('title')),
            startsAt: iso(f.get('startsAt')),
            endsAt: iso(f.get('endsAt')),
            timezone: String(f.get('timezone') || zone),
            recurring,
          },
        }),
      );
      form.reset();
      setFreq('');
      windows.reload();
    } catch (err) {
      setError(err);
    }
  };
  const remove = async (id: string) => {
    try {
      await call(api.DELETE('/maintenance-windows/{window_id}', { params: { path: { window_id: id } } }));
      windows.reload();
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const names = Object.fromEntries((monitors.data ?? []).map((m) => [m.id, m.name]));
  return (
    <main id="main">
      <h1>Maintenance windows</h1>
      <ErrorNote error={windows.error} />
      {windows.data && windows.data.length === 0 && (
        <Empty title="No maintenance windows">
          <p>Plan a window before planned work: the monitor's failures during it do not alert anyone.</p>
        </Empty>
      )}
      {(windows.data ?? []).length > 0 && (
        <ul class="cards">
          {(windows.data ?? []).map((w) => (
            <li class="card" data-window-id={w.id}>
              <div class="title-row">
                <h2>{w.title} <span class="muted">· {names[w.monitorId] ?? w.monitorId}</span></h2>
                <button type="button" class="danger" onClick={() => remove(w.id)} aria-label={`Delete ${w.title}`}>Delete</button>
              </div>
              <p>{describe(w)}</p>
            </li>
          ))}
        </ul>
      )}
      <form class="card form" onSubmit={create}>
        <h2>Plan a window</h2>
        <ErrorNote error={error} />
        <Field label="Monitor" id="mw-monitor" error={fe('monitorId')}>
          <select id="mw-monitor" name="monitorId" required>
            {(monitors.data ?? []).map((m) => <option value={m.id}>{m.name}</option>)}
          </select>
        </Field>
        <Field label="Title" id="mw-title" error={fe('title')}>
          <input id="mw-title" name="title" required />
        </Field>
        <div class="grid3">
          <Field label="Starts" id="mw-start" error={fe('startsAt')} hint="In this browser's time.">
            <input id="mw-start" name="startsAt" type="datetime-local" required />
          </Field>
          <Field label="Ends" id="mw-end" error={fe('endsAt')}>
            <input id="mw-end" name="endsAt" type="datetime-local" required />
          </Field>
          <Field label="Time zone" id="mw-zone" error={fe('timezone')}>
            <input id="mw-zone" name="timezone" defaultValue={zone} />
          </Field>
        </div>
        <Field label="Repeats" id="mw-freq" error={fe('recurring')}>
          <select id="mw-freq" value={freq} onChange={(e) => setFreq((e.target as HTMLSelectElement).value)}>
            <option value="">Never (one-off)</option>
            <option value="daily">Every day</option>
            <option value="weekly">Every week, on the start's weekday</option>
            <option value="monthly">Every month, on the start's day</option>
          </select>
        </Field>
        <button type="submit" class="primary">Plan window</button>
      </form>
    </main>
  );
}

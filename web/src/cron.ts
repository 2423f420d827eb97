// Wall-clock time in an IANA zone, and the next starts of a maintenance schedule, for the
// form's preview. The server decides (tocsin-core's `maintenance.rs`, croner for cron): this
// reads the common 5-field forms (numbers, names, `*`, ranges, lists, steps; day of month and
// day of week together meaning either) and says nothing for anything else.

const parts = new Map<string, Intl.DateTimeFormat>();

function fmt(timeZone: string): Intl.DateTimeFormat {
  let f = parts.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    parts.set(timeZone, f);
  }
  return f;
}

/** The wall-clock time of instant `ms` in `timeZone`, as a UTC timestamp of those fields. */
export function wallOf(ms: number, timeZone: string): number {
  const p: Record<string, number> = {};
  for (const x of fmt(timeZone).formatToParts(new Date(ms))) if (x.type !== 'literal') p[x.type] = Number(x.value);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
}

/** The instant at which `timeZone`'s clocks show `wall` (a UTC timestamp of the fields); in a
 *  repeated hour the earlier, in a skipped one the instant just after. */
export function instantOf(wall: number, timeZone: string): number {
  const first = wall - (wallOf(wall, timeZone) - wall);
  const offset = wallOf(first, timeZone) - first;
  const t = wall - offset;
  const earlier = t - 3_600_000;
  return wallOf(earlier, timeZone) === wall ? earlier : t;
}

/** `datetime-local` value (`YYYY-MM-DDTHH:mm`) of instant `iso` in `timeZone`. */
export function localInput(iso: string, timeZone: string): string {
  try {
    return new Date(wallOf(new Date(iso).getTime(), timeZone)).toISOString().slice(0, 16);
  } catch {
    return '';
  }
}

/** The instant (ISO) a `datetime-local` value means in `timeZone`, or '' when it is not one. */
export function fromLocalInput(value: string, timeZone: string): string {
  const wall = Date.parse(`${value}:00Z`);
  if (Number.isNaN(wall)) return '';
  try {
    return new Date(instantOf(wall, timeZone)).toISOString();
  } catch {
    return new Date(wall).toISOString();
  }
}

const NAMES: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, oct: 10, nov: 11, dec: 12,
  sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6,
};

function field(text: string, lo: number, hi: number): Set<number> | null {
  const out = new Set<number>();
  for (const piece of text.toLowerCase().split(',')) {
    const [range, stepText] = piece.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) return null;
    let a: number;
    let b: number;
    const num = (s: string) => (s in NAMES ? NAMES[s] : /^\d+$/.test(s) ? Number(s) : NaN);
    if (range === '*') {
      a = lo;
      b = hi;
    } else if (range.includes('-')) {
      const [x, y] = range.split('-');
      a = num(x);
      b = num(y);
    } else {
      a = num(range);
      b = stepText === undefined ? a : hi;
    }
    if (Number.isNaN(a) || Number.isNaN(b) || a < lo || b > hi || a > b) return null;
    for (let v = a; v <= b; v += step) out.add(v);
  }
  return out;
}

export interface Cron {
  minutes: number[];
  hours: number[];
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  anyDay: boolean;
  anyWeekday: boolean;
}

/** The expression read, or null when it is not one of the forms this preview knows. */
export function parseCron(expr: string): Cron | null {
  const f = expr.trim().split(/\s+/);
  if (f.length !== 5) return null;
  const minutes = field(f[0], 0, 59);
  const hours = field(f[1], 0, 23);
  const days = field(f[2].replace('?', '*'), 1, 31);
  const months = field(f[3], 1, 12);
  const weekdays = field(f[4].replace('?', '*'), 0, 7);
  if (!minutes || !hours || !days || !months || !weekdays) return null;
  if (weekdays.has(7)) weekdays.add(0);
  return {
    minutes: [...minutes].sort((a, b) => a - b),
    hours: [...hours].sort((a, b) => a - b),
    days,
    months,
    weekdays,
    anyDay: f[2] === '*' || f[2] === '?',
    anyWeekday: f[4] === '*' || f[4] === '?',
  };
}

/** The next `n` starts (epoch ms) of `cron` read in `timeZone`, at or after `fromMs`. */
export function nextStarts(cron: Cron, timeZone: string, fromMs: number, n: number): number[] {
  const out: number[] = [];
  const start = new Date(wallOf(fromMs, timeZone));
  let day = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
  for (let i = 0; i < 366 * 5 && out.length < n; i++, day += 86_400_000) {
    const d = new Date(day);
    if (!cron.months.has(d.getUTCMonth() + 1)) continue;
    const dom = cron.days.has(d.getUTCDate());
    const dow = cron.weekdays.has(d.getUTCDay());
    const ok = cron.anyDay && cron.anyWeekday ? true : cron.anyDay ? dow : cron.anyWeekday ? dom : dom || dow;
    if (!ok) continue;
    for (const h of cron.hours) {
      for (const m of cron.minutes) {
        const t = instantOf(day + h * 3_600_000 + m * 60_000, timeZone);
        if (t >= fromMs && out[out.length - 1] !== t) out.push(t);
        if (out.length >= n) return out;
      }
    }
  }
  return out;
}

/** A start in words, in `timeZone`, the zone named. */
export function inWords(ms: number, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, {
      weekday: 'long',
      year: 'numeric',
      month: 'long',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZone,
      timeZoneName: 'short',
    }).format(new Date(ms));
  } catch {
    return new Date(ms).toISOString();
  }
}

/** A length in words: "2 hours", "1 hour 30 minutes", "45 minutes", "3 days". */
export function lengthInWords(ms: number): string {
  const min = Math.round(ms / 60_000);
  const d = Math.floor(min / 1440);
  const h = Math.floor((min % 1440) / 60);
  const m = min % 60;
  const part = (v: number, w: string) => (v ? `${v} ${w}${v === 1 ? '' : 's'}` : '');
  return [part(d, 'day'), part(h, 'hour'), part(m, 'minute')].filter(Boolean).join(' ') || '0 minutes';
}

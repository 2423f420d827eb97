// Dates with their time zone named: the workspace's zone (its settings) unless this browser
// was told to use another (`Settings` → "Show dates in", kept in localStorage); numbers short.
import { computed, signal } from '@preact/signals';

const KEY = 'tocsin.dateZone';
const browserZone = (() => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
})();

function stored(): string {
  try {
    return localStorage.getItem(KEY) ?? '';
  } catch {
    return '';
  }
}

/** The workspace's time zone, set when the session loads (null until then). */
export const workspaceZone = signal<string | null>(null);
/** The zone this browser was told to show dates in ('' follows the workspace). */
export const chosenZone = signal<string>(stored());
/** The zone dates are shown in. */
export const dateZone = computed(() => chosenZone.value || workspaceZone.value || browserZone);

export function chooseZone(zone: string) {
  chosenZone.value = zone;
  try {
    if (zone) localStorage.setItem(KEY, zone);
    else localStorage.removeItem(KEY);
  } catch {
    /* private mode: the choice lasts this visit */
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** A cached formatter whose time carries the zone's short name ("14:05:09 CET"). */
export function formatter(timeZone: string, dateStyle: 'medium' | 'short' = 'medium'): Intl.DateTimeFormat {
  const key = `${dateStyle} ${timeZone}`;
  let f = formats.get(key);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat(undefined, { dateStyle, timeStyle: 'long', timeZone });
    } catch {
      f = new Intl.DateTimeFormat(undefined, { dateStyle, timeStyle: 'long', timeZone: 'UTC' });
    }
    formats.set(key, f);
  }
  return f;
}

/** A date and time in the display zone, the zone named: "27 Nov 2026, 14:05:09 CET". */
export function when(iso: string | null | undefined, dateStyle: 'medium' | 'short' = 'medium'): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return formatter(dateZone.value, dateStyle).format(d);
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return 'never';
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}

export function ms(v: number | null | undefined): string {
  return v == null ? '—' : `${v < 10 ? v.toFixed(1) : Math.round(v)} ms`;
}

export function pct(v: number | null | undefined): string {
  return v == null ? '—' : `${v.toFixed(v === 100 ? 0 : 2)}%`;
}

// Dates in the reader's own time zone; numbers short.
const dt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dt.format(d);
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

// The heartbeat bar: a monitor's last checks as a row of marks, oldest first, newest at the
// right. Each status has its own shape as well as its colour, so the bar reads without colour
// (and in greyscale): UP a full solid bar, DOWN a full hatched bar, DEGRADED and CHANGED a
// half-height bar, MAINTENANCE a hollow outline, PENDING a short stub. Screen readers get one
// sentence with the counts instead of forty marks.
import { Component } from 'preact';
import { when } from './format';

export interface Beat {
  status: string;
  /** Milliseconds. */
  latency: number;
  /** RFC 3339. */
  at: string;
}


function label(beats: Beat[]): string {
  if (!beats.length) return 'No checks yet';
  const n: Record<string, number> = {};
  for (const b of beats) n[b.status] = (n[b.status] ?? 0) + 1;
  const parts = Object.entries(n)
    .sort((a, b) => b[1] - a[1])
    .map(([s, k]) => `${k} ${s.toLowerCase()}`);
  const last = beats[beats.length - 1];
  return `Last ${beats.length} check${beats.length === 1 ? '' : 's'}: ${parts.join(', ')}; latest ${last.status.toLowerCase()}`;
}

interface Props {
  beats: Beat[];
  slots: number;
}

/** `slots` marks wide whatever the number of checks (missing ones are blank at the left), so
 *  the bars of a list line up. Redrawn only when its checks change (the list re-renders its
 *  rows on every scroll step). */
export class BeatBar extends Component<Props> {
  shouldComponentUpdate(next: Props) {
    return next.beats !== this.props.beats || next.slots !== this.props.slots;
  }

  render({ beats, slots }: Props) {
    const shown = beats.slice(-slots);
    const blanks = slots - shown.length;
    return (
      <span class="beatbar" role="img" aria-label={label(shown)} data-beats={shown.length} data-latest={shown[shown.length - 1]?.status ?? ''}>
        {blanks > 0 && <span class="beat-gap" style={{ flexGrow: blanks }} />}
        {shown.map((b) => (
          <span
            class={`beat b-${b.status.toLowerCase()}`}
            title={`${when(b.at, 'short')}: ${b.status}, ${b.latency < 10 ? b.latency.toFixed(1) : Math.round(b.latency)} ms`}
          />
        ))}
      </span>
    );
  }
}

// Live updates: the server's event stream (`GET /stream`, session cookie) when it answers,
// and a poll every 5 s while it does not. Screens subscribe with `onLive` and refetch or patch
// what they show; `liveMode` tells the header which of the two is in use.
import { signal } from '@preact/signals';

export type LiveKind = 'monitor' | 'heartbeat' | 'alert' | 'incident' | 'monitor.changed' | 'poll';
type Handler = (kind: LiveKind, data: any) => void;

export const liveMode = signal<'connecting' | 'stream' | 'polling'>('connecting');

const handlers = new Set<Handler>();
let source: EventSource | null = null;
let poller: number | undefined;
let retry: number | undefined;

export function onLive(h: Handler): () => void {
  handlers.add(h);
  return () => handlers.delete(h);
}

function emit(kind: LiveKind, data: unknown) {
  for (const h of handlers) {
    try {
      h(kind, data);
    } catch (e) {
      console.error(e);
    }
  }
}

function startPolling() {
  liveMode.value = 'polling';
  if (poller === undefined) poller = window.setInterval(() => emit('poll', null), 5000);
}

function stopPolling() {
  if (poller !== undefined) clearInterval(poller);
  poller = undefined;
}

export function startLive() {
  if (source || typeof EventSource === 'undefined') {
    if (!source) startPolling();
    return;
  }
  const es = new EventSource('/stream', { withCredentials: true });
  source = es;
  es.onopen = () => {
    liveMode.value = 'stream';
    stopPolling();
  };
  es.onerror = () => {
    // While the browser reconnects (or after the server refused the stream) the screens
    // still move, by polling.
    startPolling();
    if (es.readyState === EventSource.CLOSED) {
      es.close();
      source = null;
      clearTimeout(retry);
      retry = window.setTimeout(startLive, 30000);
    }
  };
  for (const kind of ['monitor', 'heartbeat', 'alert', 'incident', 'monitor.changed'] as const) {
    es.addEventListener(kind, (ev) => {
      let data: unknown = null;
      try {
        data = JSON.parse((ev as MessageEvent).data);
      } catch {
        return;
      }
      emit(kind, data);
    });
  }
}

export function stopLive() {
  source?.close();
  source = null;
  stopPolling();
  clearTimeout(retry);
  liveMode.value = 'connecting';
}

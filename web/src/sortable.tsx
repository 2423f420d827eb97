// A list whose items are put in order by dragging a handle (pointer events, so mouse, pen
// and touch alike) or from the keyboard (arrow keys on the focused handle, or the move up
// and move down buttons). The list owns no order: it asks its owner to move an item by key,
// and announces each move in a live region for screen-reader users.
import type { ComponentChildren, VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

/** Moves the item with key `key` to index `to` (clamped); the same array when nothing moves. */
export function moveTo<T>(items: T[], keyOf: (t: T) => string, key: string, to: number): T[] {
  const from = items.findIndex((t) => keyOf(t) === key);
  const target = Math.max(0, Math.min(items.length - 1, to));
  if (from < 0 || from === target) return items;
  const next = items.slice();
  const [item] = next.splice(from, 1);
  next.splice(target, 0, item);
  return next;
}

export interface Controls {
  /** The drag handle: a button that also moves the item with the arrow keys. */
  handle: VNode;
  /** Move up / move down buttons, for people who neither drag nor use arrow keys. */
  buttons: VNode;
}

export function Sortable<T>(props: {
  items: T[];
  keyOf: (t: T) => string;
  /** The item's name in labels and announcements. */
  labelOf: (t: T) => string;
  /** Asked to put the item `key` at index `to`. */
  onMove: (key: string, to: number) => void;
  render: (item: T, controls: Controls, index: number) => ComponentChildren;
  class?: string;
  'aria-label'?: string;
}) {
  const { items, keyOf, labelOf, onMove } = props;
  const list = useRef<HTMLUListElement>(null);
  const [dragging, setDraggingState] = useState<string | null>(null);
  // Also in a ref: pointer moves can arrive before the render that follows a press.
  const held = useRef<string | null>(null);
  const setDragging = (k: string | null) => {
    held.current = k;
    setDraggingState(k);
  };
  const [said, setSaid] = useState('');
  // The latest items, for handlers that outlive the render that made them.
  const latest = useRef(items);
  latest.current = items;

  // The control to give focus back to once a move has re-rendered: the browser drops focus
  // when the focused element is moved in the document.
  const refocus = useRef<{ key: string; control: 'handle' | 'up' | 'down' } | null>(null);
  useEffect(() => {
    const r = refocus.current;
    if (!r) return;
    refocus.current = null;
    const row = Array.from(list.current?.children ?? []).find((el) => (el as HTMLElement).dataset.key === r.key);
    const target = row?.querySelector<HTMLElement>(r.control === 'handle' ? '.handle' : `[data-move="${r.control}"]`);
    if (target && document.activeElement !== target) target.focus();
  });

  const move = (key: string, to: number, control: 'handle' | 'up' | 'down') => {
    const now = latest.current;
    const target = Math.max(0, Math.min(now.length - 1, to));
    const from = now.findIndex((t) => keyOf(t) === key);
    if (from < 0) return;
    const name = labelOf(now[from]);
    if (from === target) {
      setSaid(`${name} is already ${target === 0 ? 'first' : 'last'}.`);
      return;
    }
    refocus.current = { key, control };
    onMove(key, target);
    setSaid(`${name}: position ${target + 1} of ${now.length}`);
  };
  const indexOf = (key: string) => latest.current.findIndex((t) => keyOf(t) === key);

  /** Where the pointer at `y` would put `key`: after every other item whose middle is above it. */
  const slotAt = (key: string, y: number) => {
    const rows = Array.from(list.current?.children ?? []).filter(
      (el) => el instanceof HTMLElement && el.dataset.key !== undefined && el.dataset.key !== key,
    );
    return rows.filter((el) => {
      const r = el.getBoundingClientRect();
      return r.top + r.height / 2 < y;
    }).length;
  };

  const controls = (item: T): Controls => {
    const key = keyOf(item);
    const name = labelOf(item);
    const handle = (
      <button
        type="button"
        class="handle"
        aria-label={`Drag to reorder ${name}`}
        aria-describedby="sortable-help"
        title="Drag, or use the arrow keys, to reorder"
        onPointerDown={(e) => {
          if (e.button !== 0) return;
          e.preventDefault();
          (e.currentTarget as HTMLElement).focus();
          setDragging(key);
          // Listened for on the window, not captured by the handle: reordering moves the
          // handle's element in the document, which would end a capture.
          const moveWith = (ev: PointerEvent) => {
            if (ev.pointerId !== e.pointerId || held.current !== key) return;
            const to = slotAt(key, ev.clientY);
            if (to !== indexOf(key)) move(key, to, 'handle');
          };
          const end = (ev: PointerEvent) => {
            if (ev.pointerId !== e.pointerId) return;
            setDragging(null);
            removeEventListener('pointermove', moveWith);
            removeEventListener('pointerup', end);
            removeEventListener('pointercancel', end);
          };
          addEventListener('pointermove', moveWith);
          addEventListener('pointerup', end);
          addEventListener('pointercancel', end);
        }}
        onKeyDown={(e) => {
          const i = indexOf(key);
          const to = { ArrowUp: i - 1, ArrowDown: i + 1, Home: 0, End: latest.current.length - 1 }[e.key];
          if (to === undefined) return;
          e.preventDefault();
          move(key, to, 'handle');
        }}
      >
        <span aria-hidden="true">⠿</span>
      </button>
    );
    const buttons = (
      <span class="move-buttons">
        <button type="button" class="icon" aria-label={`Move ${name} up`} data-move="up" onClick={() => move(key, indexOf(key) - 1, 'up')}>
          <span aria-hidden="true">↑</span>
        </button>
        <button type="button" class="icon" aria-label={`Move ${name} down`} data-move="down" onClick={() => move(key, indexOf(key) + 1, 'down')}>
          <span aria-hidden="true">↓</span>
        </button>
      </span>
    );
    return { handle, buttons };
  };

  return (
    <>
      <ul ref={list} class={`sortable ${props.class ?? ''}`} aria-label={props['aria-label']}>
        {items.map((item, i) => (
          <li key={keyOf(item)} data-key={keyOf(item)} class={dragging === keyOf(item) ? 'dragging' : undefined}>
            {props.render(item, controls(item), i)}
          </li>
        ))}
      </ul>
      <p class="sr-only" aria-live="polite">{said}</p>
    </>
  );
}

/** The instructions every handle points to (render once per screen). */
export function SortableHelp(): VNode {
  return (
    <p id="sortable-help" class="hint">
      Drag a handle to reorder, or focus it and press the up and down arrow keys (Home and End move to the ends).
    </p>
  );
}

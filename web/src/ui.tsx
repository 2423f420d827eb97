// Small shared pieces: status badges, field wrappers, the async-loading hook, empty states.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError } from './api/client';

export function Badge({ status }: { status: string }) {
  return <span class={`badge s-${status.toLowerCase()}`}>{status}</span>;
}

export function Field(props: {
  label: string;
  id: string;
  error?: string;
  hint?: string;
  children: ComponentChildren;
}) {
  return (
    <div class={`field${props.error ? ' has-error' : ''}`}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && <small class="hint" id={`${props.id}-hint`}>{props.hint}</small>}
      {props.error && (
        <small class="error" id={`${props.id}-error`} role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text =
    error instanceof ApiError
      ? `${error.message}${error.formErrors.length ? ` (${error.formErrors.join('; ')})` : ''}`
      : String(error);
  return (
    <p class="notice error" role="alert">
      {text}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <h2>{title}</h2>
      {children}
    </div>
  );
}

/** Runs `load` now and whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
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
  }, [...deps, n]);
  return { data, error, reload: () => setN((x) => x + 1), setData };
}

export async function copy(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

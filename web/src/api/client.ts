// The one way the dashboard talks to the server: the REST API with the session cookie,
// typed from the committed openapi.json (a contract change that breaks a screen fails tsc).
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';
import { signal } from '@preact/signals';

export type Schemas = components['schemas'];
export type Monitor = Schemas['Monitor'];
export type MonitorStatus = Schemas['MonitorStatus'];
export type MonitorType = Schemas['MonitorType'];

export const api = createClient<paths>({ baseUrl: location.origin, credentials: 'same-origin' });

/** Set when the server says the session is gone; the shell then shows the sign-in page. */
export const sessionLost = signal(false);

/** An error envelope as thrown by `call`: `field` and `fieldErrors` name the failing inputs. */
export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public field: string | null = null,
    public fieldErrors: Record<string, string[]> = {},
    public formErrors: string[] = [],
  ) {
    super(message);
  }

  /** The message for one form field (a dotted path), if the server blamed it. */
  forField(name: string): string | undefined {
    const direct = this.fieldErrors[name];
    if (direct?.length) return direct.join(' ');
    if (this.field === name) return this.message;
    return undefined;
  }
}

function toError(status: number, body: unknown): ApiError {
  const e = (body ?? {}) as Partial<Schemas['Error']>;
  return new ApiError(
    status,
    e.code ?? 'ERROR',
    e.message ?? `The server answered ${status}`,
    e.field ?? null,
    e.flattened?.fieldErrors ?? {},
    e.flattened?.formErrors ?? [],
  );
}

/** Unwraps an openapi-fetch answer: the data, or an `ApiError`. */
export async function call<T>(
  p: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await p;
  if (!response.ok) {
    if (response.status === 401) sessionLost.value = true;
    throw toError(response.status, error);
  }
  return data as T;
}

/** JSON to and from the routes outside the REST contract (`/auth/...`). */
export async function authPost<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw toError(res.status, json);
  return json as T;
}

export interface Session {
  user: { id: string; email: string; name?: string | null; emailVerified?: boolean };
  workspace: { id: string; name: string; slug?: string };
}

export async function getSession(): Promise<Session | null> {
  const res = await fetch('/auth/get-session', { credentials: 'same-origin' });
  if (!res.ok) return null;
  return (await res.json()) as Session;
}

// Create or edit a monitor of any type. The common settings, the target the type needs (URL,
// host and port), the type's own `config` keys, and a JSON box for the rarer keys (assertions,
// TLS, auth...), and where its alerts go: the escalation policy, the projects it belongs to and
// its own notification channels, picked from the workspace's, the monitors it depends on, and flap detection (how many
// changes in how many minutes pause its alerts). The server validates; its errors
// are shown beside the field they name.
// A new PUSH monitor's push URL is shown once, as the API gives its token only once. A viewer
// who follows a link here is told they cannot change monitors, and no form is drawn (role.ts).
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, call, type Monitor, type MonitorType } from '../api/client';
import { PushUrl } from '../push-url';
import { canWrite } from '../role';
import { Link, navigate } from '../router';
import { ErrorNote, Field, useLoad } from '../ui';

const TYPES: MonitorType[] = ['HTTP', 'TCP', 'PING', 'DNS', 'DNS_DIFF', 'WEBSOCKET', 'PUSH'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const RECORDS = ['A', 'AAAA', 'CNAME', 'MX', 'NS', 'TXT', 'SOA', 'SRV', 'CAA', 'PTR'];
/** The simple response checks with their own inputs (the keyword, a JSON path's value); any
 * other assertion stays in the JSON box. */
type Assertion = { target: string; operator: string; property?: string | null; value?: unknown; severity?: string | null };
const isKeyword = (a: Assertion) => a.target === 'body' && a.operator === 'contains' && typeof a.value === 'string' && !a.severity;
const isJsonEq = (a: Assertion) => a.target === 'jsonPath' && a.operator === 'eq' && !!a.property && a.value !== undefined && !a.severity;

/** The name a monitor gets when the form's is left empty: the host it watches, or its kind. */
export function defaultName(type: MonitorType, url: string, host: string): string {
  if (url.trim()) {
    try {
      return new URL(url.trim()).hostname || url.trim();
    } catch {
      return url.trim().replace(/^[a-z]+:\/\//i, '');
    }
  }
  if (host.trim()) return host.trim();
  return type === 'PUSH' ? 'Heartbeat' : `${type} monitor`;
}

/** Config keys that have their own inputs, per type; everything else goes in the JSON box. */
const OWN_KEYS: Record<string, string[]> = {
  HTTP: ['method', 'expect', 'body', 'followRedirects'],
  TCP: ['send', 'expect'],
  PING: ['count'],
  DNS: ['recordType', 'resolver', 'expected'],
  DNS_DIFF: ['recordType', 'resolver'],
  WEBSOCKET: ['send', 'expect'],
  PUSH: ['schedule', 'timezone'],
};

interface FormState {
  name: string;
  type: MonitorType;
  url: string;
  host: string;
  port: string;
  interval: string;
  timeout: string;
  retries: string;
  gracePeriod: string;
  tags: string;
  description: string;
  c: Record<string, string>;
  extra: string;
  /** Escalation policy id; '' for none. */
  policy: string;
  projects: string[];
  /** Own notification channels, in the order they are notified. */
  channels: string[];
  /** The monitors this one depends on (`dependsOn`). */
  dependsOn: string[];
  /** Flap detection on, and its settings. */
  flapOn: boolean;
  flapTransitions: string;
  flapWindow: string;
}

function blank(): FormState {
  return {
    name: '', type: 'HTTP', url: '', host: '', port: '', interval: '60', timeout: '', retries: '0',
    gracePeriod: '', tags: '', description: '', c: { method: 'GET', recordType: 'A' }, extra: '',
    policy: '', projects: [], channels: [], dependsOn: [], flapOn: true, flapTransitions: '5', flapWindow: '30',
  };
}

function fromMonitor(m: Monitor): FormState {
  const cfg = { ...(m.config as Record<string, unknown>) };
  const c: Record<string, string> = {};
  if (m.type === 'HTTP' && Array.isArray(cfg.assertions)) {
    // The first keyword and JSON-path check get their inputs; the rest stay as JSON.
    const rest = [...(cfg.assertions as Assertion[])];
    const kw = rest.findIndex(isKeyword);
    if (kw >= 0) c.keyword = String(rest.splice(kw, 1)[0].value);
    const jp = rest.findIndex(isJsonEq);
    if (jp >= 0) {
      const a = rest.splice(jp, 1)[0];
      c.jsonPath = String(a.property);
      c.jsonValue = typeof a.value === 'string' ? a.value : JSON.stringify(a.value);
    }
    if (rest.length) cfg.assertions = rest;
    else delete cfg.assertions;
  }
  for (const k of OWN_KEYS[m.type] ?? []) {
    const v = cfg[k];
    delete cfg[k];
    if (v == null) continue;
    if (k === 'expect' && typeof v === 'object') c.statusCodes = ((v as { statusCodes?: unknown[] }).statusCodes ?? []).join(', ');
    else if (Array.isArray(v)) c[k] = v.join(', ');
    else c[k] = String(v);
  }
  return {
    name: m.name, type: m.type, url: m.url ?? '', host: m.host ?? '', port: m.port?.toString() ?? '',
    interval: String(m.interval), timeout: m.timeout?.toString() ?? '', retries: String(m.retries ?? 0),
    gracePeriod: m.gracePeriod?.toString() ?? '', tags: m.tags.join(', '), description: m.description ?? '',
    c, extra: Object.keys(cfg).length ? JSON.stringify(cfg, null, 2) : '',
    policy: m.escalationPolicyId ?? '', projects: [...m.projectIds], channels: [...m.notificationChannelIds],
    dependsOn: [...(m.dependsOn ?? [])],
    flapOn: m.flapDetection != null,
    flapTransitions: String(m.flapDetection?.transitions ?? 5),
    flapWindow: String(m.flapDetection?.windowMinutes ?? 30),
  };
}

/** A JSON path's expected value: a number, true/false or null as such, anything else as text. */
function jsonValue(s: string): unknown {
  const t = s.trim();
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  if (t === 'true' || t === 'false' || t === 'null') return JSON.parse(t);
  return t;
}

const list = (s: string | undefined) => (s ?? '').split(',').map((x) => x.trim()).filter(Boolean);
const num = (s: string) => (s.trim() === '' ? undefined : Number(s));

function toBody(f: FormState): Record<string, unknown> {
  let config: Record<string, unknown> = {};
  if (f.extra.trim()) {
    try {
      config = JSON.parse(f.extra);
    } catch {
      throw new ApiError(400, 'VALIDATION_ERROR', 'Fix the advanced settings', 'extra', { extra: ['Not valid JSON.'] });
    }
  }
  const c = f.c;
  const set = (k: string, v: unknown) => {
    if (v !== undefined && v !== '' && !(Array.isArray(v) && !v.length)) config[k] = v;
  };
  switch (f.type) {
    case 'HTTP':
      set('method', c.method);
      if (list(c.statusCodes).length)
        config.expect = { statusCodes: list(c.statusCodes).map((s) => (/^\d+$/.test(s) ? Number(s) : s)) };
      set('body', c.body);
      if (c.followRedirects) config.followRedirects = c.followRedirects === 'true';
      {
        const own: Assertion[] = [];
        if (c.keyword?.trim()) own.push({ target: 'body', operator: 'contains', value: c.keyword.trim() });
        if (c.jsonPath?.trim()) own.push({ target: 'jsonPath', operator: 'eq', property: c.jsonPath.trim(), value: jsonValue(c.jsonValue ?? '') });
        if (own.length) config.assertions = [...own, ...((config.assertions as Assertion[] | undefined) ?? [])];
      }
      break;
    case 'TCP':
    case 'WEBSOCKET':
      set('send', c.send);
      set('expect', c.expect);
      break;
    case 'PING':
      set('count', num(c.count ?? ''));
      break;
    case 'DNS':
    case 'DNS_DIFF':
      set('recordType', c.recordType);
      set('resolver', c.resolver);
      if (f.type === 'DNS') set('expected', list(c.expected));
      break;
    case 'PUSH':
      set('schedule', c.schedule);
      set('timezone', c.timezone);
      break;
  }
  const usesUrl = f.type === 'HTTP' || f.type === 'WEBSOCKET';
  const usesHost = ['TCP', 'PING', 'DNS', 'DNS_DIFF'].includes(f.type);
  const body: Record<string, unknown> = {
    name: f.name.trim() || defaultName(f.type, usesUrl ? f.url : '', usesHost ? f.host : ''),
    type: f.type,
    interval: num(f.interval),
    retries: num(f.retries),
    tags: list(f.tags),
    description: f.description || null,
    config,
    flapDetection: f.flapOn ? { transitions: num(f.flapTransitions), windowMinutes: num(f.flapWindow) } : null,
  };
  if (f.timeout.trim()) body.timeout = num(f.timeout);
  if (usesUrl) body.url = f.url;
  if (usesHost) body.host = f.host;
  if (f.type === 'TCP') body.port = num(f.port);
  if (f.type === 'PUSH' && f.gracePeriod.trim()) body.gracePeriod = num(f.gracePeriod);
  return body;
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));
const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => b[i] === x);

/** Where alerts go and which projects: all of it on create, only what changed on update. */
function routing(f: FormState, was: FormState | null): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (was ? f.policy !== was.policy : f.policy) out.escalationPolicyId = f.policy || null;
  // Project order is each project's own; membership is all that the form changes.
  if (was ? !sameSet(f.projects, was.projects) : f.projects.length) out.projectIds = f.projects;
  // Channels are notified in order, so a new order is a change.
  if (was ? !sameList(f.channels, was.channels) : f.channels.length) out.notificationChannelIds = f.channels;
  if (was ? !sameSet(f.dependsOn, was.dependsOn) : f.dependsOn.length) out.dependsOn = f.dependsOn;
  return out;
}

/** A checkbox list of the workspace's items; the ticked ids keep their order, new ones last. */
function Picker(props: {
  id: string;
  legend: string;
  items: { id: string; name: string; note?: string }[] | undefined;
  value: string[];
  onChange: (ids: string[]) => void;
  error?: string;
  hint: string;
  empty: ComponentChildren;
}) {
  const { id, items, value, error } = props;
  const described = [error ? `${id}-error` : '', `${id}-hint`].filter(Boolean).join(' ');
  return (
    <fieldset id={id} class={`picker${error ? ' has-error' : ''}`} aria-describedby={described} aria-busy={items ? undefined : 'true'}>
      <legend>{props.legend}</legend>
      {items && items.length === 0 && <p class="muted">{props.empty}</p>}
      <div class="caps">
        {items?.map((it) => (
          <label class="check">
            <input
              type="checkbox"
              name={id}
              value={it.id}
              checked={value.includes(it.id)}
              aria-invalid={error ? 'true' : undefined}
              onChange={(e) => {
                const on = (e.target as HTMLInputElement).checked;
                props.onChange(on ? [...value.filter((x) => x !== it.id), it.id] : value.filter((x) => x !== it.id));
              }}
            />
            {it.name}
            {it.note && <span class="muted">&nbsp;{it.note}</span>}
          </label>
        ))}
      </div>
      <small class="hint" id={`${id}-hint`}>{props.hint}</small>
      {error && <small class="error" id={`${id}-error`} role="alert">{error}</small>}
    </fieldset>
  );
}

export function MonitorForm({ id }: { id?: string }) {
  if (!canWrite()) {
    return (
      <main id="main">
        <h1>{id ? 'Edit monitor' : 'New monitor'}</h1>
        <p>Viewers cannot create or change monitors.</p>
        <p>
          <Link href={id ? `/monitors/${id}` : '/'}>{id ? 'Back to the monitor' : 'Back to the monitors'}</Link>
        </p>
      </main>
    );
  }
  return <Editor id={id} />;
}

function Editor({ id }: { id?: string }) {
  const [f, setF] = useState<FormState | null>(id ? null : blank());
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [push, setPush] = useState<{ id: string; token: string; interval: number } | null>(null);
  // The monitor as loaded, to send only what the edit changed.
  const [was, setWas] = useState<FormState | null>(null);
  const policies = useLoad(() => call(api.GET('/escalation-policies')), []);
  const projects = useLoad(() => call(api.GET('/projects')), []);
  const channels = useLoad(() => call(api.GET('/notification-channels', { params: { query: { limit: 200 } } })), []);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);

  useEffect(() => {
    if (!id) return;
    call(api.GET('/monitors/{monitor_id}', { params: { path: { monitor_id: id } } })).then((m) => {
      setF(fromMonitor(m));
      setWas(fromMonitor(m));
    }, setError);
  }, [id]);

  if (push) {
    return (
      <main id="main">
        <h1>Push monitor created</h1>
        <p>Have your job call this address when it runs.</p>
        <PushUrl token={push.token} interval={push.interval} />
        <Link class="button primary" href={`/monitors/${push.id}`}>Go to the monitor</Link>
      </main>
    );
  }
  if (!f) return <main id="main" aria-busy="true"><ErrorNote error={error} />Loading…</main>;

  const upd = (patch: Partial<FormState>) => setF({ ...f, ...patch });
  const updC = (k: string, v: string) => setF({ ...f, c: { ...f.c, [k]: v } });
  const err = (...names: string[]) => {
    if (!(error instanceof ApiError)) return undefined;
    for (const n of names) {
      const m = error.forField(n);
      if (m) return m;
    }
    return undefined;
  };
  /** The error on a list field or on any of its items (`projectIds.2`). */
  const listErr = (name: string) => {
    if (!(error instanceof ApiError)) return undefined;
    const own = error.forField(name);
    if (own) return own;
    const items = Object.entries(error.fieldErrors).filter(([k]) => k.startsWith(`${name}.`));
    return items.length ? [...new Set(items.flatMap(([, m]) => m))].join(' ') : undefined;
  };
  const input = (key: keyof FormState, label: string, props: Record<string, unknown> = {}, hint?: string) => (
    <Field label={label} id={`m-${key}`} error={err(key)} hint={hint}>
      <input
        id={`m-${key}`}
        name={key}
        value={f[key] as string}
        onInput={(e) => upd({ [key]: (e.target as HTMLInputElement).value } as Partial<FormState>)}
        aria-invalid={err(key) ? 'true' : undefined}
        aria-describedby={err(key) ? `m-${key}-error` : undefined}
        {...props}
      />
    </Field>
  );
  const cfg = (key: string, label: string, hint?: string, props: Record<string, unknown> = {}) => {
    const e = err(`config.${key}`, key === 'statusCodes' ? 'config.expect.statusCodes' : '', key === 'statusCodes' ? 'config.expect' : '');
    return (
      <Field label={label} id={`c-${key}`} error={e} hint={hint}>
        <input
          id={`c-${key}`}
          value={f.c[key] ?? ''}
          onInput={(ev) => updC(key, (ev.target as HTMLInputElement).value)}
          aria-invalid={e ? 'true' : undefined}
          {...props}
        />
      </Field>
    );
  };
  const choice = (key: string, label: string, options: string[]) => (
    <Field label={label} id={`c-${key}`} error={err(`config.${key}`)}>
      <select id={`c-${key}`} value={f.c[key] ?? options[0]} onChange={(e) => updC(key, (e.target as HTMLSelectElement).value)}>
        {options.map((o) => <option value={o}>{o}</option>)}
      </select>
    </Field>
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = { ...toBody(f), ...routing(f, id ? was : null) };
      if (id) {
        delete body.type;
        await call(api.PATCH('/monitors/{monitor_id}', { params: { path: { monitor_id: id } }, body: body as never }));
        navigate(`/monitors/${id}`);
      } else {
        const m = await call(api.POST('/monitors', { body: body as never }));
        if (m.type === 'PUSH' && m.pushToken) setPush({ id: m.id, token: m.pushToken, interval: m.interval });
        else navigate(`/monitors/${m.id}`);
      }
    } catch (e2) {
      setError(e2);
    } finally {
      setBusy(false);
    }
  };

  const t = f.type;
  return (
    <main id="main">
      <p><Link href={id ? `/monitors/${id}` : '/'}>← Back</Link></p>
      <h1>{id ? `Edit ${f.name}` : 'New monitor'}</h1>
      <form class="card form" onSubmit={submit} noValidate>
        <ErrorNote error={error} />
        <Field label="Type" id="m-type" error={err('type')}>
          <select id="m-type" value={t} disabled={!!id} onChange={(e) => upd({ type: (e.target as HTMLSelectElement).value as MonitorType })}>
            {TYPES.map((x) => <option value={x}>{x}</option>)}
          </select>
        </Field>
        {input('name', 'Name', { placeholder: defaultName(t, f.url, f.host) }, 'Optional: the host it watches when left empty.')}
        {(t === 'HTTP' || t === 'WEBSOCKET') &&
          input('url', 'URL', { type: 'url', required: true, placeholder: t === 'HTTP' ? 'https://example.com/health' : 'wss://example.com/socket' })}
        {['TCP', 'PING', 'DNS', 'DNS_DIFF'].includes(t) && input('host', t.startsWith('DNS') ? 'Name to resolve' : 'Host', { required: true })}
        {t === 'TCP' && input('port', 'Port', { type: 'number', min: 1, max: 65535, required: true })}
        {t === 'HTTP' && (
          <>
            {choice('method', 'Method', METHODS)}
            {cfg('statusCodes', 'Accepted status codes', 'Comma separated: 200, 2xx, 200-299. Default 2xx.')}
            {cfg('keyword', 'Response must contain', 'Optional keyword: the check fails when the body lacks it.')}
            <div class="grid2">
              {cfg('jsonPath', 'JSON path', 'Optional, e.g. $.status', { placeholder: '$.status' })}
              {cfg('jsonValue', 'Must equal', 'The value at that path.')}
            </div>
            {cfg('body', 'Request body')}
          </>
        )}
        {(t === 'TCP' || t === 'WEBSOCKET') && (
          <>
            {cfg('send', 'Send after connecting')}
            {cfg('expect', 'Reply must contain')}
          </>
        )}
        {t === 'PING' && cfg('count', 'Echo requests per check', '1 to 10; default 3.', { type: 'number' })}
        {(t === 'DNS' || t === 'DNS_DIFF') && (
          <>
            {choice('recordType', 'Record type', RECORDS)}
            {cfg('resolver', 'Resolver', 'An IP address, optionally with port; default the system resolver.')}
            {t === 'DNS' && cfg('expected', 'Expected records', 'Comma separated; all must be in the answer.')}
          </>
        )}
        {t === 'PUSH' && (
          <>
            {input('gracePeriod', 'Grace period (seconds)', { type: 'number' }, 'How late a push may be before the monitor goes down.')}
            {cfg('schedule', 'Schedule (cron)', 'Optional 5-field cron saying when pushes are expected.')}
            {cfg('timezone', 'Schedule time zone', 'IANA name, e.g. Europe/Paris; default UTC.')}
          </>
        )}
        <div class="grid3">
          {input('interval', t === 'PUSH' ? 'Expected every (seconds)' : 'Check every (seconds)', { type: 'number', min: 1 })}
          {t !== 'PUSH' && input('timeout', 'Timeout (seconds)', { type: 'number', min: 1 })}
          {t !== 'PUSH' && input('retries', 'Retries', { type: 'number', min: 0, max: 10 })}
        </div>
        <fieldset id="m-flap">
          <legend>Flap detection</legend>
          <label class="check">
            <input type="checkbox" name="flapOn" checked={f.flapOn} onChange={(e) => upd({ flapOn: (e.target as HTMLInputElement).checked })} />
            Pause alerts while the monitor flaps
          </label>
          {f.flapOn && (
            <div class="grid3">
              <Field label="Changes" id="m-flapTransitions" error={err('flapDetection.transitions', 'flapDetection')} hint="Between UP and DOWN, 2 to 100.">
                <input
                  id="m-flapTransitions"
                  type="number"
                  min={2}
                  max={100}
                  value={f.flapTransitions}
                  onInput={(e) => upd({ flapTransitions: (e.target as HTMLInputElement).value })}
                  aria-invalid={err('flapDetection.transitions') ? 'true' : undefined}
                />
              </Field>
              <Field label="Within (minutes)" id="m-flapWindow" error={err('flapDetection.windowMinutes')} hint="1 to 1,440.">
                <input
                  id="m-flapWindow"
                  type="number"
                  min={1}
                  max={1440}
                  value={f.flapWindow}
                  onInput={(e) => upd({ flapWindow: (e.target as HTMLInputElement).value })}
                  aria-invalid={err('flapDetection.windowMinutes') ? 'true' : undefined}
                />
              </Field>
            </div>
          )}
          <small class="hint">
            A flapping monitor sends one notice when it starts and one when it settles, instead of a page per change.
          </small>
        </fieldset>
        {input('tags', 'Tags', {}, 'Comma separated.')}
        <Field label="Description" id="m-description" error={err('description')}>
          <textarea id="m-description" value={f.description} onInput={(e) => upd({ description: (e.target as HTMLTextAreaElement).value })} />
        </Field>
        <Field
          label="Escalation policy"
          id="m-policy"
          error={err('escalationPolicyId')}
          hint="Who is notified, and when, while an alert stays open. Policies are set up under Escalation."
        >
          <select
            id="m-policy"
            name="escalationPolicyId"
            value={f.policy}
            onChange={(e) => upd({ policy: (e.target as HTMLSelectElement).value })}
            aria-invalid={err('escalationPolicyId') ? 'true' : undefined}
            aria-describedby={err('escalationPolicyId') ? 'm-policy-error m-policy-hint' : 'm-policy-hint'}
          >
            <option value="">None</option>
            {(policies.data ?? []).map((p) => <option value={p.id}>{p.name}</option>)}
            {f.policy && policies.data && !policies.data.some((p) => p.id === f.policy) && <option value={f.policy}>{f.policy}</option>}
          </select>
        </Field>
        <Picker
          id="m-channels"
          legend="Notification channels"
          items={channels.data?.notificationChannels.map((c) => ({ id: c.id, name: c.name, note: c.type }))}
          value={f.channels}
          onChange={(channels) => upd({ channels })}
          error={listErr('notificationChannelIds')}
          hint="Notified when the monitor goes down or comes back. None ticked and no policy: the workspace's default channels."
          empty={<>No notification channels yet. <Link href="/channels">Add one</Link>.</>}
        />
        <Picker
          id="m-dependsOn"
          legend="Depends on"
          items={monitors.data?.filter((m) => m.id !== id).map((m) => ({ id: m.id, name: m.name, note: m.type }))}
          value={f.dependsOn}
          onChange={(dependsOn) => upd({ dependsOn })}
          error={listErr('dependsOn')}
          hint="While one of these is down, this monitor's alert opens under that outage and pages nobody: one page for one outage."
          empty={<>No other monitors yet.</>}
        />
        <Picker
          id="m-projects"
          legend="Projects"
          items={projects.data?.map((p) => ({ id: p.id, name: p.name }))}
          value={f.projects}
          onChange={(projects) => upd({ projects })}
          error={listErr('projectIds')}
          hint="Groups the monitor belongs to."
          empty={<>No projects yet. <Link href="/projects">Create one</Link>.</>}
        />
        <ErrorNote error={policies.error ?? projects.error ?? channels.error ?? monitors.error} />
        <details open={!!f.extra}>
          <summary>Advanced settings (JSON)</summary>
          <Field label="Other config keys" id="m-extra" error={err('extra', 'config')} hint="Assertions, TLS, auth, headers… as in the API's config schema for this type.">
            <textarea id="m-extra" class="code" rows={6} value={f.extra} onInput={(e) => upd({ extra: (e.target as HTMLTextAreaElement).value })} />
          </Field>
        </details>
        <button type="submit" class="primary" disabled={busy}>{id ? 'Save' : 'Create monitor'}</button>
      </form>
    </main>
  );
}

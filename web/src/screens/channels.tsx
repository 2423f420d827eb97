// Notification channels: the list with enable/disable, edit, delete (confirmed) and a test
// whose delivery is followed until it settles; a create form whose settings are generated from
// the type's config schema (channel-form.tsx); and each channel's delivery history. A viewer
// sees the channels and their deliveries only (role.ts).
import { useEffect, useRef, useState } from 'preact/hooks';
import { onLive } from '../live';
import { api, ApiError, call, type Schemas } from '../api/client';
import { ConfigFields, readConfig } from '../channel-form';
import { ConfirmButton } from '../confirm';
import { emailReadiness, loadEmailReadiness } from '../email-banner';
import { when } from '../format';
import { canWrite } from '../role';
import { Badge, Empty, ErrorNote, Field, useLoad } from '../ui';

type Channel = Schemas['NotificationChannel'];
type ChannelType = Schemas['ChannelType'];
type Delivery = Schemas['Delivery'];
type ChannelEvent = Schemas['NotificationChannel']['events'][number];
/** The events a channel can take, in words; `test` always reaches it and is not offered. */
const EVENTS: [ChannelEvent, string][] = [
  ['alert.opened', 'Alert opened'],
  ['alert.escalated', 'Alert escalated'],
  ['alert.acknowledged', 'Alert acknowledged'],
  ['alert.resolved', 'Alert resolved'],
  ['monitor.degraded', 'Monitor degraded'],
  ['monitor.changed', 'Monitor changed (DNS answers)'],
  ['monitor.stale', 'Monitor not checked (stale)'],
  ['monitor.flapping', 'Monitor flapping'],
  ['monitor.stable', 'Monitor stable again'],
  ['region.down', 'Region down'],
  ['certificate.expiring', 'Certificate expiring'],
  ['incident.created', 'Incident opened'],
  ['incident.updated', 'Incident updated'],
  ['incident.resolved', 'Incident resolved'],
];
const TYPES: ChannelType[] = [
  'WEBHOOK', 'SLACK', 'DISCORD', 'TEAMS', 'GOOGLE_CHAT', 'MATTERMOST', 'EMAIL', 'TELEGRAM',
  'PAGERDUTY', 'OPSGENIE', 'NTFY', 'PUSHOVER', 'GOTIFY', 'MATRIX', 'TWILIO_SMS',
];

export function Channels() {
  const channels = useLoad(() => call(api.GET('/notification-channels', { params: { query: { limit: 200 } } })), []);
  const [open, setOpen] = useState<string | null>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const list = channels.data?.notificationChannels ?? [];
  const changed = () => {
    channels.reload();
    loadEmailReadiness();
  };
  const writer = canWrite();
  return (
    <main id="main">
      <h1>Notification channels</h1>
      <ErrorNote error={channels.error ?? error} />
      {channels.data && list.length === 0 && (
        <Empty title="No notification channels yet">
          <p>
            Channels are where alerts go: a webhook, Slack, Telegram, email…
            {writer && ' Add one below; mark it default to cover every monitor.'}
          </p>
        </Empty>
      )}
      {list.map((c) =>
        editing === c.id ? (
          <ChannelForm
            key={`edit-${c.id}`}
            channel={c}
            onDone={() => {
              setEditing(null);
              changed();
            }}
          />
        ) : (
          <ChannelCard
            key={c.id}
            c={c}
            open={open === c.id}
            onToggle={() => setOpen(open === c.id ? null : c.id)}
            onTested={() => setOpen(c.id)}
            onEdit={() => setEditing(c.id)}
            onChanged={changed}
            onError={setError}
          />
        ),
      )}
      {writer && <ChannelForm key="new" onDone={changed} />}
    </main>
  );
}

function ChannelCard(props: {
  c: Channel;
  open: boolean;
  onToggle: () => void;
  onTested: () => void;
  onEdit: () => void;
  onChanged: () => void;
  onError: (e: unknown) => void;
}) {
  const { c } = props;
  const [test, setTest] = useState<Delivery | null>(null);
  const writer = canWrite();
  const path = { channel_id: c.id };
  const setEnabled = async (enabled: boolean) => {
    props.onError(null);
    try {
      await call(api.PATCH('/notification-channels/{channel_id}', { params: { path, header: {} }, body: { enabled } }));
      props.onChanged();
    } catch (e) {
      props.onError(e);
    }
  };
  const remove = async () => {
    props.onError(null);
    try {
      await call(api.DELETE('/notification-channels/{channel_id}', { params: { path, header: {} } }));
      props.onChanged();
    } catch (e) {
      props.onError(e);
    }
  };
  const sendTest = async () => {
    props.onError(null);
    try {
      setTest(await call(api.POST('/notification-channels/{channel_id}/test', { params: { path } })));
      props.onTested();
    } catch (e) {
      props.onError(e);
    }
  };
  return (
    <article class={`card channel${c.enabled ? '' : ' disabled'}`} data-channel-id={c.id} aria-labelledby={`ch-h-${c.id}`}>
      <div class="title-row">
        <h2 id={`ch-h-${c.id}`}>
          {c.name} <span class="muted">{c.type}</span> {c.isDefault && <span class="badge s-up">default</span>}{' '}
          {!c.enabled && <span class="badge s-paused">disabled</span>}
        </h2>
        <div class="actions">
          {writer && (
            <>
              <button type="button" onClick={sendTest} aria-label={`Send test to ${c.name}`}>Send test</button>
              <button type="button" onClick={props.onEdit} aria-label={`Edit ${c.name}`}>Edit</button>
              <button type="button" onClick={() => setEnabled(!c.enabled)} aria-label={`${c.enabled ? 'Disable' : 'Enable'} ${c.name}`}>
                {c.enabled ? 'Disable' : 'Enable'}
              </button>
            </>
          )}
          <button type="button" onClick={props.onToggle} aria-expanded={props.open} aria-label={`Deliveries of ${c.name}`}>Deliveries</button>
          {writer && <ConfirmButton label="Delete" subject={c.name} question={`Delete ${c.name} and its delivery history?`} onConfirm={remove} />}
        </div>
      </div>
      {test && <TestOutcome channelId={c.id} first={test} />}
      {props.open && <Deliveries id={c.id} />}
    </article>
  );
}

/** Follows a test's delivery until it settles: the answer of `POST .../test` is still PENDING. */
function TestOutcome({ channelId, first }: { channelId: string; first: Delivery }) {
  const [d, setD] = useState<Delivery>(first);
  useEffect(() => {
    setD(first);
    let stop = false;
    let timer: number | undefined;
    const started = Date.now();
    const poll = async () => {
      const page = await call(
        api.GET('/notification-channels/{channel_id}/deliveries', {
          params: { path: { channel_id: channelId }, query: { event: 'test', limit: 20 } },
        }),
      ).catch(() => null);
      if (stop) return;
      const now = page?.deliveries.find((x) => x.id === first.id);
      if (now) setD(now);
      // Deliveries go out in the background, usually within a second; stop after two minutes.
      if ((!now || now.status === 'PENDING') && Date.now() - started < 120_000) timer = window.setTimeout(poll, 700);
    };
    timer = window.setTimeout(poll, 300);
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [first.id]);
  const detail = [
    d.responseStatus != null ? `HTTP ${d.responseStatus}` : '',
    d.latencyMs != null ? `${d.latencyMs} ms` : '',
  ].filter(Boolean).join(', ');
  let text: string;
  if (d.status === 'PENDING') text = 'Test sent: waiting for the delivery…';
  else if (d.status === 'DELIVERED') text = `Test delivered${detail ? ` (${detail})` : ''}.`;
  else text = `Test failed${detail ? ` (${detail})` : ''}: ${d.error ?? 'no detail'}${d.status === 'RETRYING' ? ' It will be retried.' : ''}`;
  return (
    <p class={`notice test-outcome${d.status === 'DELIVERED' ? ' ok' : d.status === 'PENDING' ? '' : ' error'}`} role="status" aria-busy={d.status === 'PENDING'}>
      <Badge status={d.status} /> {text}
    </p>
  );
}

/** A type in words: TELEGRAM → Telegram, TWILIO_SMS → Twilio sms. */
function typeName(t: ChannelType): string {
  const w = t.toLowerCase().replace(/_/g, ' ');
  return w[0].toUpperCase() + w.slice(1);
}

/** The events ticked in the form: null (every event) when all are, on a new channel. */
function readEvents(f: FormData, creating: boolean): ChannelEvent[] | null {
  const on = f.getAll('events').map(String) as ChannelEvent[];
  if (creating && on.length === EVENTS.length) return null;
  return [...on, 'test'];
}

/** Which events the channel takes: folded, with how many in its summary. */
function EventPicker({ prefix, stored }: { prefix: string; stored?: ChannelEvent[] }) {
  const [on, setOn] = useState<Set<string>>(() => new Set(stored ? stored : EVENTS.map(([e]) => e)));
  const n = EVENTS.filter(([e]) => on.has(e)).length;
  return (
    <details class="events">
      <summary>Events: {n === EVENTS.length ? 'all' : `${n} of ${EVENTS.length}`}</summary>
      <fieldset id={`${prefix}-events`}>
        <legend>Events this channel takes</legend>
        <div class="caps">
          {EVENTS.map(([e, label]) => (
            <label class="check">
              <input
                type="checkbox"
                name="events"
                value={e}
                checked={on.has(e)}
                onChange={(ev) => {
                  const next = new Set(on);
                  if ((ev.target as HTMLInputElement).checked) next.add(e);
                  else next.delete(e);
                  setOn(next);
                }}
              />
              {label}
            </label>
          ))}
        </div>
      </fieldset>
    </details>
  );
}

/** Creates a channel, or edits `channel` (name, settings, events, default flag). */
function ChannelForm({ channel, onDone }: { channel?: Channel; onDone: () => void }) {
  const [type, setType] = useState<ChannelType>(channel?.type ?? 'WEBHOOK');
  const [error, setError] = useState<unknown>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [formKey, setFormKey] = useState(0);
  const first = useRef<HTMLInputElement>(null);
  const editing = channel !== undefined;
  useEffect(() => {
    if (editing) first.current?.focus();
  }, []);
  const noEmail = emailReadiness.value?.smtpConfigured === false;
  const stored = channel?.config as Record<string, unknown> | undefined;

  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setError(null);
    setSecret(null);
    setBusy(true);
    try {
      const config = readConfig(type, f, stored);
      // Left empty, a channel is named after its type, as the first of its kind usually is.
      const name = String(f.get('name') ?? '').trim() || typeName(channel?.type ?? type);
      const isDefault = f.get('isDefault') === 'on';
      const events = readEvents(f, !channel);
      if (channel) {
        const path = { channel_id: channel.id };
        // The version the edit starts from, so a change made meanwhile is not overwritten.
        const got = await api.GET('/notification-channels/{channel_id}', { params: { path } });
        const etag = got.response.headers.get('etag');
        await call(
          api.PATCH('/notification-channels/{channel_id}', {
            params: { path, header: etag ? { 'If-Match': etag } : {} },
            body: { name, config, isDefault, events },
          }),
        );
      } else {
        const c = await call(api.POST('/notification-channels', { body: { name, type, config, events, isDefault } }));
        const s = (c.config as Record<string, unknown>).secret;
        if (type === 'WEBHOOK' && typeof s === 'string' && s.startsWith('whsec_')) setSecret(s);
        setFormKey((k) => k + 1);
      }
      onDone();
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const prefix = editing ? `ch-${channel.id}` : 'ch';
  return (
    <form class="card form channel-form" onSubmit={submit} aria-label={editing ? `Edit ${channel.name}` : 'New channel'} key={formKey}>
      <h2>{editing ? `Edit ${channel.name}` : 'New channel'}</h2>
      <ErrorNote error={error} />
      {secret && (
        <p class="notice" role="status">
          Signing secret (shown once): <code>{secret}</code>
        </p>
      )}
      {editing ? (
        <p>
          Type: <strong>{channel.type}</strong>
        </p>
      ) : (
        <Field label="Type" id={`${prefix}-type`} error={fe('type')}>
          <select id={`${prefix}-type`} value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as ChannelType)}>
            {TYPES.map((t) => (
              <option value={t} disabled={t === 'EMAIL' && noEmail}>
                {t === 'EMAIL' && noEmail ? 'EMAIL (this server sends no email)' : t}
              </option>
            ))}
          </select>
        </Field>
      )}
      <Field label="Name" id={`${prefix}-name`} error={fe('name')}>
        <input id={`${prefix}-name`} name="name" defaultValue={channel?.name ?? ''} placeholder={typeName(type)} ref={first} />
      </Field>
      <ConfigFields type={type} stored={stored} error={error} />
      <EventPicker prefix={prefix} stored={channel?.events} />
      <label class="check">
        <input type="checkbox" name="isDefault" defaultChecked={channel?.isDefault ?? false} /> Default: alerts of every monitor that
        names no channel come here
      </label>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {editing ? 'Save channel' : 'Create channel'}
        </button>
        {editing && (
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

function Deliveries({ id }: { id: string }) {
  const d = useLoad(() => call(api.GET('/notification-channels/{channel_id}/deliveries', { params: { path: { channel_id: id }, query: { event: null } } })), [id]);
  // Deliveries are sent in the background: follow them until they settle.
  useEffect(() => {
    const t = window.setTimeout(d.reload, 1500);
    const off = onLive((kind) => kind === 'poll' && d.reload());
    return () => {
      clearTimeout(t);
      off();
    };
  }, [id]);
  const items = (d.data as Schemas['DeliveryPage'] | undefined)?.deliveries ?? [];
  if (d.error) return <ErrorNote error={d.error} />;
  if (!d.data) return <p aria-busy="true">Loading…</p>;
  if (!items.length) return <p>No deliveries yet.{canWrite() && ' “Send test” sends one.'}</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption>Deliveries</caption>
        <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempt</th><th scope="col">Response</th></tr></thead>
        <tbody>
          {items.map((x) => (
            <tr>
              <td>{when(x.createdAt)}</td>
              <td>{x.event}</td>
              <td><Badge status={x.status} /></td>
              <td>{x.attempt}</td>
              <td class="muted">{x.responseStatus ?? ''} {x.error ?? ''} {x.latencyMs != null ? `${x.latencyMs} ms` : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// Notification channels: the list, a create form (the address field each common type needs,
// a JSON box for the others), send a test, and each channel's delivery history.
import { useEffect, useState } from 'preact/hooks';
import { onLive } from '../live';
import { api, ApiError, call, type Schemas } from '../api/client';
import { when } from '../format';
import { Badge, Empty, ErrorNote, Field, useLoad } from '../ui';

type ChannelType = Schemas['ChannelType'];
const TYPES: ChannelType[] = [
  'WEBHOOK', 'SLACK', 'DISCORD', 'TEAMS', 'GOOGLE_CHAT', 'MATTERMOST', 'EMAIL', 'TELEGRAM',
  'PAGERDUTY', 'OPSGENIE', 'NTFY', 'PUSHOVER', 'GOTIFY', 'MATRIX', 'TWILIO_SMS',
];
/** The one config key a type's address goes in, for the types that need only an address. */
const URL_KEY: Partial<Record<ChannelType, string>> = {
  WEBHOOK: 'url', SLACK: 'webhookUrl', DISCORD: 'webhookUrl', TEAMS: 'webhookUrl',
  GOOGLE_CHAT: 'webhookUrl', MATTERMOST: 'webhookUrl',
};

export function Channels() {
  const channels = useLoad(() => call(api.GET('/notification-channels', { params: { query: { limit: 200 } } })), []);
  const [type, setType] = useState<ChannelType>('WEBHOOK');
  const [error, setError] = useState<unknown>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [note, setNote] = useState('');

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    setError(null);
    setSecret(null);
    try {
      let config: Record<string, unknown> = {};
      const key = URL_KEY[type];
      if (key) config[key] = String(f.get('address') ?? '');
      else if (type === 'EMAIL') config.to = String(f.get('address') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
      const extra = String(f.get('extra') ?? '').trim();
      if (extra) {
        try {
          config = { ...config, ...JSON.parse(extra) };
        } catch {
          throw new ApiError(400, 'VALIDATION_ERROR', 'Fix the settings', 'extra', { extra: ['Not valid JSON.'] });
        }
      }
      const c = await call(
        api.POST('/notification-channels', {
          body: { name: String(f.get('name')), type, config, events: null, isDefault: f.get('isDefault') === 'on' },
        }),
      );
      const s = (c.config as Record<string, unknown>).secret;
      if (type === 'WEBHOOK' && typeof s === 'string' && s.startsWith('whsec_')) setSecret(s);
      form.reset();
      channels.reload();
    } catch (err) {
      setError(err);
    }
  };
  const test = async (id: string) => {
    setNote('');
    try {
      const d = await call(api.POST('/notification-channels/{channel_id}/test', { params: { path: { channel_id: id } } }));
      setNote(`Test sent: ${d.status}${d.responseStatus ? ` (HTTP ${d.responseStatus})` : ''}${d.error ? ` — ${d.error}` : ''}`);
      setOpen(id);
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const key = URL_KEY[type];
  const list = channels.data?.notificationChannels ?? [];
  return (
    <main id="main">
      <h1>Notification channels</h1>
      <ErrorNote error={channels.error} />
      {note && <p class="notice" role="status">{note}</p>}
      {channels.data && list.length === 0 && (
        <Empty title="No notification channels yet">
          <p>Channels are where alerts go: a webhook, Slack, email… Add one below; mark it default to cover every monitor.</p>
        </Empty>
      )}
      {list.map((c) => (
        <article class="card" data-channel-id={c.id}>
          <div class="title-row">
            <h2>{c.name} <span class="muted">{c.type}</span> {c.isDefault && <span class="badge s-up">default</span>}</h2>
            <div class="actions">
              <button type="button" onClick={() => test(c.id)}>Send test</button>
              <button type="button" onClick={() => setOpen(open === c.id ? null : c.id)} aria-expanded={open === c.id}>Deliveries</button>
            </div>
          </div>
          {open === c.id && <Deliveries id={c.id} />}
        </article>
      ))}
      <form class="card form" onSubmit={create}>
        <h2>New channel</h2>
        <ErrorNote error={error} />
        {secret && (
          <p class="notice" role="status">Signing secret (shown once): <code>{secret}</code></p>
        )}
        <Field label="Type" id="ch-type">
          <select id="ch-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as ChannelType)}>
            {TYPES.map((t) => <option value={t}>{t}</option>)}
          </select>
        </Field>
        <Field label="Name" id="ch-name" error={fe('name')}>
          <input id="ch-name" name="name" required />
        </Field>
        {(key || type === 'EMAIL') && (
          <Field label={type === 'EMAIL' ? 'Send to (comma separated)' : 'Webhook URL'} id="ch-address" error={fe(key ? `config.${key}` : 'config.to')}>
            <input id="ch-address" name="address" required />
          </Field>
        )}
        <Field label={key || type === 'EMAIL' ? 'Other settings (JSON, optional)' : 'Settings (JSON)'} id="ch-extra" error={fe('extra') ?? fe('config')} hint="The channel type's config keys, as in the API documentation.">
          <textarea id="ch-extra" name="extra" class="code" />
        </Field>
        <label class="check"><input type="checkbox" name="isDefault" /> Default: alerts of every monitor that names no channel come here</label>
        <button type="submit" class="primary">Create channel</button>
      </form>
    </main>
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
  if (!items.length) return <p>No deliveries yet. “Send test” sends one.</p>;
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

// Workspace settings: name, address (slug), time zone and whether members must sign in
// through single sign-on (`requireSso`, owners only) (`GET`/`PATCH /workspace/settings`,
// version-locked: the form sends the ETag it read, so a change made meanwhile elsewhere is
// refused rather than overwritten), and the plan with its quotas and what is used
// (`GET /workspace/plan`). A viewer reads the settings as a list, with no form to save; the
// browser's own choice of time zone for dates is theirs and stays.
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { refreshSession } from '../app';
import { chooseZone, chosenZone, when, workspaceZone } from '../format';
import { canWrite } from '../role';
import { ErrorNote, Field, useLoad } from '../ui';

type Settings = Schemas['WorkspaceSettings'];
type Quota = Schemas['PlanQuota'];
type Usage = Schemas['PlanUsage'];

/** The answer and its `ETag` (the version a later write is based on). */
async function tagged<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<[T, string | null]> {
  const r = await p;
  return [await call(Promise.resolve(r)), r.response.headers.get('ETag')];
}

const USAGE: [keyof Usage & keyof Quota, string][] = [
  ['monitors', 'Monitors'],
  ['statusPages', 'Status pages'],
  ['notificationChannels', 'Notification channels'],
  ['apiKeys', 'API keys'],
  ['members', 'Members'],
];

function zones(): string[] {
  const f = (Intl as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf;
  try {
    return f ? f('timeZone') : [];
  } catch {
    return [];
  }
}

export function Settings() {
  const [current, setCurrent] = useState<Settings | null>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [form, setForm] = useState({ name: '', slug: '', timezone: '' });
  const [requireSso, setRequireSso] = useState(false);
  const [loadError, setLoadError] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [said, setSaid] = useState('');
  const plan = useLoad(() => call(api.GET('/workspace/plan')), []);

  const load = async () => {
    try {
      const [s, tag] = await tagged(api.GET('/workspace/settings'));
      setCurrent(s);
      setEtag(tag);
      setForm({ name: s.name, slug: s.slug, timezone: s.timezone });
      setRequireSso(s.requireSso);
      setLoadError(null);
    } catch (err) {
      setLoadError(err);
    }
  };
  useEffect(() => {
    load();
  }, []);

  const save = async (e: Event) => {
    e.preventDefault();
    if (!current) return;
    setError(null);
    setSaid('');
    setBusy(true);
    // Only what changed is sent: a partial update leaves the rest as it is.
    const body: Schemas['UpdateSettings'] = {};
    if (form.name !== current.name) body.name = form.name;
    if (form.slug !== current.slug) body.slug = form.slug;
    if (form.timezone !== current.timezone) body.timezone = form.timezone;
    if (requireSso !== current.requireSso) body.requireSso = requireSso;
    try {
      const [s, tag] = await tagged(
        api.PATCH('/workspace/settings', { params: { header: etag ? { 'If-Match': etag } : {} }, body }),
      );
      setCurrent(s);
      setEtag(tag);
      setForm({ name: s.name, slug: s.slug, timezone: s.timezone });
      setRequireSso(s.requireSso);
      workspaceZone.value = s.timezone;
      setSaid('Settings saved.');
      if (body.name !== undefined) refreshSession();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const conflict = error instanceof ApiError && error.code === 'VERSION_CONFLICT';
  const input = (key: keyof typeof form, label: string, hint: string, props: Record<string, unknown> = {}) => (
    <Field label={label} id={`ws-${key}`} error={fe(key)} hint={hint}>
      <input
        id={`ws-${key}`}
        name={key}
        value={form[key]}
        onInput={(e) => setForm({ ...form, [key]: (e.target as HTMLInputElement).value })}
        aria-invalid={fe(key) ? 'true' : undefined}
        aria-describedby={fe(key) ? `ws-${key}-error` : `ws-${key}-hint`}
        {...props}
      />
    </Field>
  );

  return (
    <main id="main">
      <h1>Workspace settings</h1>
      <ErrorNote error={loadError} />
      {!current && !loadError && <p aria-busy="true">Loading…</p>}
      {current && !canWrite() && (
        <section class="card" aria-labelledby="ws-settings-h">
          <h2 id="ws-settings-h">General</h2>
          <dl class="billing-facts">
            <dt>Workspace name</dt>
            <dd>{current.name}</dd>
            <dt>Address (slug)</dt>
            <dd>{current.slug}</dd>
            <dt>Time zone</dt>
            <dd>{current.timezone}</dd>
            <dt>Single sign-on</dt>
            <dd>{current.requireSso ? 'Required for members who are not owners' : 'Not required'}</dd>
          </dl>
          <p class="muted">Created {when(current.createdAt)} · last changed {when(current.updatedAt)}</p>
        </section>
      )}
      {current && canWrite() && (
        <form class="card form" onSubmit={save} noValidate aria-labelledby="ws-settings-h">
          <h2 id="ws-settings-h">General</h2>
          {conflict ? (
            <p class="notice error" role="alert">
              Someone changed these settings since this page loaded.{' '}
              <button type="button" class="link" onClick={() => { setError(null); load(); }}>Load their version</button>{' '}
              and make your change again.
            </p>
          ) : (
            <ErrorNote error={error} />
          )}
          {said && <p class="notice" role="status">{said}</p>}
          {input('name', 'Workspace name', '1 to 100 characters; shown in the workspace switcher.', { required: true, maxLength: 100 })}
          {input('slug', 'Address (slug)', '3 to 48 lowercase letters, digits and single hyphens.', { required: true, autocomplete: 'off', spellcheck: false })}
          {input('timezone', 'Time zone', 'An IANA name such as Europe/Berlin: reports and schedules are shown in it.', { list: 'ws-zones', autocomplete: 'off' })}
          <datalist id="ws-zones">
            {zones().map((z) => <option value={z} />)}
          </datalist>
          <Field
            label="Require single sign-on"
            id="ws-requireSso"
            error={fe('requireSso')}
            hint="Members who are not owners sign in through your identity provider only; owners keep their password. Owners only."
          >
            <input
              id="ws-requireSso"
              name="requireSso"
              type="checkbox"
              checked={requireSso}
              onChange={(e) => setRequireSso((e.target as HTMLInputElement).checked)}
              aria-describedby={fe('requireSso') ? 'ws-requireSso-error' : 'ws-requireSso-hint'}
            />
          </Field>
          <p class="muted">Created {when(current.createdAt)} · last changed {when(current.updatedAt)}</p>
          <button type="submit" class="primary" disabled={busy}>Save settings</button>
        </form>
      )}
      <section class="card form" aria-labelledby="dates-h">
        <h2 id="dates-h">Dates in this browser</h2>
        <Field label="Show dates in" id="date-zone" hint="Your choice, kept in this browser; the workspace's time zone otherwise.">
          <select id="date-zone" value={chosenZone.value} onChange={(e) => chooseZone((e.target as HTMLSelectElement).value)}>
            <option value="">The workspace's time zone{workspaceZone.value ? ` (${workspaceZone.value})` : ''}</option>
            {zones().map((z) => <option value={z}>{z}</option>)}
          </select>
        </Field>
      </section>
      <section class="card" aria-labelledby="plan-h">
        <h2 id="plan-h">Plan{plan.data ? `: ${plan.data.plan}` : ''}</h2>
        <ErrorNote error={plan.error} />
        {plan.data && <PlanTable quotas={plan.data.quotas} usage={plan.data.usage} />}
      </section>
    </main>
  );
}

function PlanTable({ quotas, usage }: { quotas: Quota; usage: Usage }) {
  return (
    <div class="table-wrap">
      <table class="plan">
        <caption>Usage against the plan's quotas</caption>
        <thead>
          <tr><th scope="col">Resource</th><th scope="col">Used</th><th scope="col">Quota</th></tr>
        </thead>
        <tbody>
          {USAGE.map(([k, label]) => {
            const used = usage[k];
            const max = quotas[k];
            const share = max ? Math.min(1, used / max) : 0;
            return (
              <tr data-usage={k}>
                <th scope="row">{label}</th>
                <td>
                  {used}
                  {max ? (
                    <span class={`usage-bar${share >= 0.9 ? ' full' : ''}`} aria-hidden="true">
                      <span style={{ width: `${Math.round(share * 100)}%` }} />
                    </span>
                  ) : null}
                </td>
                <td>{max == null ? 'Unlimited' : max}</td>
              </tr>
            );
          })}
          <tr>
            <th scope="row">Shortest check interval</th>
            <td>—</td>
            <td>{quotas.minIntervalSeconds == null ? 'No limit' : `${quotas.minIntervalSeconds} s`}</td>
          </tr>
        </tbody>
      </table>
    </div>
  );
}

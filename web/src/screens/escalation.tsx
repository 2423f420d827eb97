// Escalation policies: who is notified, and when, while an alert stays open. The list (each
// step in words), and one form for create and edit: a name and 1 to 10 steps, each a delay in
// minutes after the alert opened and the notification channels it goes to. The server checks
// the rules (delays 0 to 10,080 and increasing, known channels); each error is shown on the
// step's field it names (`steps.<i>.delayMinutes`, `steps.<i>.notificationChannelIds`). A
// viewer gets the list alone (role.ts).
import { useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { ConfirmButton } from '../confirm';
import { canWrite } from '../role';
import { Link } from '../router';
import { Empty, ErrorNote, Field, useLoad } from '../ui';

type Policy = Schemas['EscalationPolicy'];
type Channel = Schemas['NotificationChannel'];
interface StepDraft {
  delay: string;
  channels: string[];
}

const MAX_STEPS = 10;

function minutes(n: number): string {
  if (n === 0) return 'at once';
  if (n % 1440 === 0) return `after ${n / 1440} day${n === 1440 ? '' : 's'}`;
  if (n % 60 === 0) return `after ${n / 60} hour${n === 60 ? '' : 's'}`;
  return `after ${n} minute${n === 1 ? '' : 's'}`;
}

export function Escalation() {
  const policies = useLoad(() => call(api.GET('/escalation-policies')), []);
  const channels = useLoad(() => call(api.GET('/notification-channels', { params: { query: { limit: 200 } } })), []);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [said, setSaid] = useState('');
  const chans = channels.data?.notificationChannels ?? [];
  const names = Object.fromEntries(chans.map((c) => [c.id, c.name]));
  const list = policies.data ?? [];
  const writer = canWrite();

  const remove = async (p: Policy) => {
    setError(null);
    try {
      await call(api.DELETE('/escalation-policies/{policy_id}', { params: { path: { policy_id: p.id } } }));
      setSaid(`${p.name} deleted.`);
      policies.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <main id="main">
      <h1>Escalation policies</h1>
      <p class="muted">
        A policy notifies more people the longer an alert stays open: each step is sent its delay after the alert opened,
        unless the alert was acknowledged or resolved by then.
        {writer && (
          <>
            {' '}A monitor follows the policy chosen in its form: open the monitor, then Edit, and pick the policy under
            “Escalation policy” (or choose it when you <Link href="/monitors/new">create a monitor</Link>).
          </>
        )}
      </p>
      <ErrorNote error={policies.error ?? channels.error ?? error} />
      <p class="sr-only" role="status" aria-live="polite">{said}</p>
      {policies.data && list.length === 0 && (
        <Empty title="No escalation policies yet">
          {writer && (
            <p>
              {chans.length
                ? 'Create one below: for example, the team channel at once, then the on-call pager after 15 minutes.'
                : 'Policies send alerts to notification channels: add a channel first, then create a policy here.'}
            </p>
          )}
          {writer && channels.data && !chans.length && <p><Link class="button primary" href="/channels">Add a notification channel</Link></p>}
        </Empty>
      )}
      {list.length > 0 && (
        <ul class="cards">
          {list.map((p) => (
            <li class="card" data-policy-id={p.id}>
              <div class="title-row">
                <h2>{p.name}</h2>
                {writer && (
                  <div class="actions">
                    <button type="button" aria-expanded={editing === p.id} aria-label={`Edit ${p.name}`} onClick={() => setEditing(editing === p.id ? null : p.id)}>
                      Edit
                    </button>
                    <ConfirmButton label="Delete" subject={p.name} question="Delete this policy? Open alerts stop escalating." onConfirm={() => remove(p)} />
                  </div>
                )}
              </div>
              <ol class="steps">
                {p.steps.map((s) => (
                  <li>
                    {minutes(s.delayMinutes)[0].toUpperCase() + minutes(s.delayMinutes).slice(1)}:{' '}
                    {s.notificationChannelIds.map((c) => names[c] ?? c).join(', ')}
                  </li>
                ))}
              </ol>
              {writer && editing === p.id && (
                <PolicyForm
                  policy={p}
                  channels={chans}
                  onSaved={(saved) => {
                    setEditing(null);
                    setSaid(`${saved.name} saved.`);
                    policies.setData(list.map((x) => (x.id === saved.id ? saved : x)));
                  }}
                  onCancel={() => setEditing(null)}
                />
              )}
            </li>
          ))}
        </ul>
      )}
      {writer && chans.length > 0 && (
        <PolicyForm
          channels={chans}
          onSaved={(saved) => {
            setSaid(`${saved.name} created.`);
            policies.reload();
          }}
        />
      )}
    </main>
  );
}

function PolicyForm(props: { policy?: Policy; channels: Channel[]; onSaved: (p: Policy) => void; onCancel?: () => void }) {
  const { policy, channels } = props;
  const initial = (): StepDraft[] =>
    policy
      ? policy.steps.map((s) => ({ delay: String(s.delayMinutes), channels: [...s.notificationChannelIds] }))
      : [{ delay: '0', channels: channels.filter((c) => c.isDefault).map((c) => c.id) }];
  const [name, setName] = useState(policy?.name ?? '');
  const [steps, setSteps] = useState<StepDraft[]>(initial);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const key = policy ? `ep-${policy.id}` : 'ep-new';

  const err = (n: string): string | undefined => {
    if (!(error instanceof ApiError)) return undefined;
    const own = error.forField(n);
    if (own) return own;
    // A single bad channel id is reported on `...notificationChannelIds.<j>`.
    const nested = Object.entries(error.fieldErrors).filter(([f]) => f.startsWith(`${n}.`));
    return nested.length ? nested.flatMap(([, m]) => m).join(' ') : undefined;
  };
  const setStep = (i: number, patch: Partial<StepDraft>) => setSteps(steps.map((s, j) => (j === i ? { ...s, ...patch } : s)));

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    // A delay that is not a whole number goes as typed, so the server names the field.
    const body = {
      name,
      steps: steps.map((s) => {
        const n = Number(s.delay);
        return { delayMinutes: (s.delay.trim() !== '' && Number.isInteger(n) ? n : s.delay) as number, notificationChannelIds: s.channels };
      }),
    };
    try {
      const saved = policy
        ? await call(api.PATCH('/escalation-policies/{policy_id}', { params: { path: { policy_id: policy.id } }, body }))
        : await call(api.POST('/escalation-policies', { body }));
      if (!policy) {
        setName('');
        setSteps(initial());
      }
      props.onSaved(saved);
    } catch (err2) {
      setError(err2);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class={policy ? 'form subform' : 'card form'} onSubmit={submit} noValidate aria-label={policy ? `Edit ${policy.name}` : 'New escalation policy'}>
      {!policy && <h2>New escalation policy</h2>}
      <ErrorNote error={error} />
      <Field label="Policy name" id={`${key}-name`} error={err('name')}>
        <input
          id={`${key}-name`}
          value={name}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
          required
          maxLength={100}
          aria-invalid={err('name') ? 'true' : undefined}
          aria-describedby={err('name') ? `${key}-name-error` : undefined}
        />
      </Field>
      {error instanceof ApiError && error.forField('steps') && <p class="error" role="alert">{error.forField('steps')}</p>}
      <ol class="step-list">
        {steps.map((s, i) => {
          const id = `${key}-s${i}`;
          const delayErr = err(`steps.${i}.delayMinutes`);
          const chanErr = err(`steps.${i}.notificationChannelIds`);
          return (
            <li class="step">
              <div class="title-row">
                <h3>Step {i + 1}</h3>
                {steps.length > 1 && (
                  <button type="button" class="link" onClick={() => setSteps(steps.filter((_, j) => j !== i))} aria-label={`Remove step ${i + 1}`}>
                    Remove
                  </button>
                )}
              </div>
              <Field label={`Step ${i + 1}: minutes after the alert opens`} id={`${id}-delay`} error={delayErr} hint="0 to 10,080 (a week), more than the step before.">
                <input
                  id={`${id}-delay`}
                  type="number"
                  inputMode="numeric"
                  min={0}
                  max={10080}
                  value={s.delay}
                  onInput={(e) => setStep(i, { delay: (e.target as HTMLInputElement).value })}
                  aria-invalid={delayErr ? 'true' : undefined}
                  aria-describedby={delayErr ? `${id}-delay-error` : `${id}-delay-hint`}
                />
              </Field>
              <fieldset class={`caps${chanErr ? ' has-error' : ''}`} aria-describedby={chanErr ? `${id}-chan-error` : undefined}>
                <legend>Step {i + 1}: notify</legend>
                {channels.map((c) => (
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={s.channels.includes(c.id)}
                      onChange={(e) => {
                        const on = (e.target as HTMLInputElement).checked;
                        setStep(i, { channels: on ? [...s.channels, c.id] : s.channels.filter((x) => x !== c.id) });
                      }}
                    />
                    {c.name} <span class="muted">&nbsp;{c.type}</span>
                  </label>
                ))}
                {chanErr && <small class="error" id={`${id}-chan-error`} role="alert">{chanErr}</small>}
              </fieldset>
            </li>
          );
        })}
      </ol>
      <div class="actions">
        {steps.length < MAX_STEPS && (
          <button
            type="button"
            onClick={() => {
              const last = Number(steps[steps.length - 1]?.delay);
              setSteps([...steps, { delay: Number.isFinite(last) ? String(last + 15) : '', channels: [] }]);
            }}
          >
            Add a step
          </button>
        )}
        <button type="submit" class="primary" disabled={busy}>{policy ? 'Save policy' : 'Create policy'}</button>
        {props.onCancel && <button type="button" onClick={props.onCancel}>Cancel</button>}
      </div>
    </form>
  );
}

// Billing: the workspace's plan and subscription, what it uses against the plan's limits,
// an upgrade button per plan on sale (Stripe Checkout) and "Manage billing" (Stripe's
// portal). Owners only (billing:manage comes from a signed-in session alone): anyone else is
// told so rather than shown refusals (role.ts). On a server without Stripe the plan and usage
// show, without buttons.
import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import type { components } from '../api/schema';
import { when } from '../format';
import { role } from '../role';
import { path } from '../router';
import { ErrorNote, useLoad } from '../ui';

type Usage = components['schemas']['Usage'];
type Subscription = components['schemas']['Subscription'];

const METRICS: Record<string, string> = {
  monitors: 'Monitors',
  status_pages: 'Status pages',
  members: 'Members',
  api_keys: 'Active API keys',
  notification_channels: 'Notification channels',
  checks: 'Checks run this period',
  notifications: 'Notifications attempted this period',
};

const STATUS: Record<Subscription['status'], string> = {
  none: 'No subscription',
  trialing: 'Trial',
  active: 'Active',
  past_due: 'Payment past due',
  canceled: 'Cancelled',
  incomplete: 'Awaiting first payment',
  unpaid: 'Unpaid',
};

/** The past-due warning, on this screen and above every other one for owners. */
export function PastDueBanner({ sub }: { sub: Subscription | undefined }) {
  if (sub?.status !== 'past_due') return null;
  return (
    <p class="notice error" role="alert" data-testid="past-due">
      The last payment for this workspace failed. Nothing is turned off: update the payment method under{' '}
      <a href="/app/billing">Manage billing</a> before the retries run out, or the workspace returns to the default plan.
    </p>
  );
}

/** Loads the subscription for the banner; silent for people who may not read it. */
export function BillingBanner() {
  const sub = useLoad(() => call(api.GET('/billing/subscription')).catch(() => undefined), []);
  if (path.value === '/billing') return null;
  return <PastDueBanner sub={sub.data} />;
}

export function Billing() {
  // An unknown role is asked anyway: the server decides.
  if (role.value && role.value !== 'owner') {
    return (
      <main id="main">
        <h1>Billing</h1>
        <p>The workspace's plan and payments are managed by its owners.</p>
      </main>
    );
  }
  return <BillingScreen />;
}

function BillingScreen() {
  const sub = useLoad(() => call(api.GET('/billing/subscription')), []);
  const usage = useLoad(() => call(api.GET('/billing/usage')), []);
  const plans = useLoad(() => call(api.GET('/billing/plans')), []);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState('');
  const back = new URLSearchParams(location.search).get('checkout');

  const open = async (what: string, go: () => Promise<{ url: string }>) => {
    setError(null);
    setBusy(what);
    try {
      const { url } = await go();
      location.assign(url);
    } catch (err) {
      setError(err);
      setBusy('');
    }
  };

  const s = sub.data;
  const selling = s?.provider === 'stripe';
  const onSale = plans.data?.plans ?? [];
  return (
    <main id="main">
      <h1>Billing</h1>
      <ErrorNote error={sub.error ?? usage.error ?? plans.error ?? error} />
      {back === 'success' && (
        <p class="notice" role="status">
          Thank you: the new plan applies as soon as Stripe confirms the payment.
        </p>
      )}
      <PastDueBanner sub={s} />
      {s && (
        <section aria-labelledby="plan-h">
          <h2 id="plan-h">Plan</h2>
          <dl class="billing-facts">
            <dt>Plan</dt>
            <dd data-testid="plan">{s.plan}</dd>
            <dt>Status</dt>
            <dd data-testid="status">{STATUS[s.status]}</dd>
            {s.currentPeriodEnd && (
              <>
                <dt>{s.cancelAtPeriodEnd ? 'Ends' : 'Renews'}</dt>
                <dd>{when(s.currentPeriodEnd)}</dd>
              </>
            )}
          </dl>
          {selling ? (
            <p>
              <button
                type="button"
                disabled={!!busy}
                onClick={() => open('portal', () => call(api.POST('/billing/portal')))}
              >
                {busy === 'portal' ? 'Opening…' : 'Manage billing'}
              </button>{' '}
              <small class="muted">Payment method, invoices and cancelling, at Stripe.</small>
            </p>
          ) : (
            <p class="muted">This server does not sell plans: the plan is set by its operator.</p>
          )}
        </section>
      )}
      {usage.data && <UsageTable usage={usage.data} />}
      {selling && onSale.length > 0 && (
        <section aria-labelledby="plans-h">
          <h2 id="plans-h">Plans</h2>
          <ul class="billing-plans">
            {onSale.map((p) => (
              <li data-plan={p.name}>
                <strong>{p.name}</strong>{' '}
                <span class="muted">
                  {p.quotas.monitors == null ? 'unlimited monitors' : `${p.quotas.monitors} monitors`}
                  {p.quotas.statusPages != null && `, ${p.quotas.statusPages} status pages`}
                  {p.quotas.members != null && `, ${p.quotas.members} members`}
                </span>{' '}
                {s?.plan === p.name ? (
                  <em>current plan</em>
                ) : (
                  <button
                    type="button"
                    class="primary"
                    disabled={!!busy}
                    onClick={() =>
                      open(p.name, () => call(api.POST('/billing/checkout', { body: { plan: p.name } })))
                    }
                  >
                    {busy === p.name ? 'Opening…' : `Upgrade to ${p.name}`}
                  </button>
                )}
              </li>
            ))}
          </ul>
          <p class="muted">A smaller plan removes nothing: what exists keeps working, and new items past a limit are refused.</p>
        </section>
      )}
    </main>
  );
}

function UsageTable({ usage }: { usage: Usage }) {
  return (
    <section aria-labelledby="usage-h">
      <h2 id="usage-h">Usage</h2>
      <p class="muted">
        {when(usage.periodStart)} to {when(usage.periodEnd)}
      </p>
      <div class="table-wrap">
        <table class="plan">
          <caption class="sr-only">Usage against the plan's limits</caption>
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Used</th>
              <th scope="col">Limit</th>
            </tr>
          </thead>
          <tbody>
            {usage.items.map((i) => {
              const share = i.limit ? Math.min(1, i.used / i.limit) : 0;
              return (
                <tr data-metric={i.metric}>
                  <th scope="row">{METRICS[i.metric] ?? i.metric}</th>
                  <td>
                    {i.used}
                    {i.limit ? (
                      <span
                        class={`usage-bar${share >= 0.9 ? ' full' : ''}`}
                        role="meter"
                        aria-label={`${METRICS[i.metric] ?? i.metric}: ${i.used} of ${i.limit}`}
                        aria-valuemin={0}
                        aria-valuemax={i.limit}
                        aria-valuenow={i.used}
                      >
                        <span style={{ width: `${Math.round(share * 100)}%` }} />
                      </span>
                    ) : null}
                  </td>
                  <td>{i.limit == null ? 'unlimited' : i.limit}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

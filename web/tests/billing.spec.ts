// The billing screen in a real browser against the real binary. Without Stripe (the shared
// server of global-setup): the configured plan and usage, no buttons. With Stripe (a second
// `tocsin serve` started here, pointed at a Stripe-speaking server on loopback): the plan and
// status, usage bars, an upgrade button per plan on sale that opens Checkout, "Manage billing"
// that opens the portal, and, after a payment fails (a webhook event signed as Stripe signs
// it), the past-due banner on every screen. Accessibility (axe) and a screenshot.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, shots } from './helpers';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen } from './server';


const SECRET = 'whsec_playwright_billing';

async function signUp(page: Page, base: string, email: string) {
  await page.goto(`${base}/app/sign-up`);
  await page.getByLabel('Name').fill('Kit');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
}

const nav = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

test('without Stripe the billing screen shows the plan and usage, and no buttons', async ({ page }) => {
  await signUp(page, process.env.TOCSIN_URL!, `kit+${Date.now()}@example.com`);
  await nav(page, 'Billing');
  await expect(page.getByRole('heading', { name: 'Billing', level: 1 })).toBeVisible();
  await expect(page.getByTestId('plan')).toHaveText('self-hosted');
  await expect(page.getByTestId('status')).toHaveText('No subscription');
  await expect(page.locator('tr[data-metric="checks"]')).toBeVisible();
  await expect(page.getByText('This server does not sell plans')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Manage billing' })).toHaveCount(0);
  await expect(page.getByRole('button', { name: /Upgrade/ })).toHaveCount(0);
  await axe(page, 'billing (no Stripe)');
});

test.describe('with Stripe', () => {
  let tocsin: ChildProcess;
  let stripe: Server;
  let base = '';
  let stripeBase = '';
  const subscriptions = new Map<string, unknown>();

  test.beforeAll(async () => {
    // The Stripe API as its reference shows it, for the calls the server makes; Checkout and
    // the portal are pages here, so the browser's navigation to them can be seen.
    stripe = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const json = (v: unknown) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(v));
        };
        if (req.url === '/v1/customers') return json({ id: 'cus_pw', object: 'customer', metadata: {} });
        if (req.url === '/v1/checkout/sessions')
          return json({ id: 'cs_pw', object: 'checkout.session', url: `${stripeBase}/pay/${form.get('line_items[0][price]')}` });
        if (req.url === '/v1/billing_portal/sessions')
          return json({ id: 'bps_pw', object: 'billing_portal.session', url: `${stripeBase}/portal` });
        const sub = req.url?.match(/^\/v1\/subscriptions\/(\w+)$/);
        if (sub && subscriptions.has(sub[1])) return json(subscriptions.get(sub[1]));
        if (req.url?.startsWith('/pay/') || req.url === '/portal') {
          res.writeHead(200, { 'content-type': 'text/html' });
          return res.end(`<!doctype html><title>Stripe ${req.url}</title><h1>Stripe ${req.url}</h1>`);
        }
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"no such route"}}');
      });
    });
    stripeBase = `http://127.0.0.1:${await listen(stripe)}`;

    const dir = mkdtempSync(join(tmpdir(), 'tocsin-billing-'));
    writeFileSync(
      join(dir, 'tocsin.toml'),
      [
        `stripe_secret_key = "sk_test_pw"`,
        `stripe_webhook_secret = "${SECRET}"`,
        `stripe_api_url = "${stripeBase}"`,
        '[plans]',
        'default = "free"',
        '[plans.quotas.free]',
        'monitors = 3',
        'status_pages = 1',
        '[plans.quotas.team]',
        'monitors = 50',
        'status_pages = 5',
        'stripe_price = "price_team"',
        '[plans.quotas.business]',
        'monitors = 500',
        'stripe_price = "price_business"',
        '',
      ].join('\n'),
    );
    const probe = createServer();
    const port = await listen(probe);
    await new Promise((ok) => probe.close(ok));
    const env = { ...process.env };
    delete env.TOCSIN_DATABASE_URL;
    delete env.TOCSIN_LISTEN;
    delete env.TOCSIN_DATA_DIR;
    base = `http://127.0.0.1:${port}`;
    tocsin = spawn(
      process.env.TOCSIN_BIN_PATH!,
      ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'), '--config', join(dir, 'tocsin.toml')],
      { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error('the Stripe-enabled tocsin did not start');
      const up = await fetch(`${base}/healthz`).then((r) => r.ok).catch(() => false);
      if (up) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  test.afterAll(async () => {
    tocsin?.kill('SIGTERM');
    stripe?.close();
  });

  /** Posts `event` to the webhook, signed as Stripe signs it. */
  async function deliver(event: Record<string, unknown>) {
    const body = JSON.stringify(event);
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex');
    const r = await fetch(`${base}/billing/stripe/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` },
      body,
    });
    expect(r.status, await r.clone().text()).toBe(200);
  }

  test('an owner upgrades through Checkout, manages billing, and sees a failed payment', async ({ page }) => {
    await signUp(page, base, `owner+${Date.now()}@example.com`);
    await nav(page, 'Billing');
    await expect(page.getByTestId('plan')).toHaveText('free');
    await expect(page.getByRole('button', { name: 'Upgrade to team' })).toBeVisible();
    await expect(page.getByRole('button', { name: 'Upgrade to business' })).toBeVisible();
    await axe(page, 'billing (free)');

    await page.getByRole('button', { name: 'Upgrade to team' }).click();
    await expect(page).toHaveURL(`${stripeBase}/pay/price_team`);

    // Stripe reports the completed checkout; the workspace is on team.
    const ws = await page.evaluate(async () => (await (await fetch('/workspace')).json()) as { id: string });
    const now = Math.floor(Date.now() / 1000);
    const sub = (status: string) => ({
      id: 'sub_pw', object: 'subscription', customer: 'cus_pw', status, cancel_at_period_end: false,
      current_period_start: now - 86_400, current_period_end: now + 29 * 86_400,
      items: { object: 'list', data: [{ price: { id: 'price_team' } }] },
    });
    subscriptions.set('sub_pw', sub('active'));
    await deliver({
      id: 'evt_pw_1', object: 'event', type: 'checkout.session.completed', created: now - 10,
      data: { object: { id: 'cs_pw', object: 'checkout.session', client_reference_id: ws.id, customer: 'cus_pw', subscription: 'sub_pw' } },
    });
    await page.goto(`${base}/app/billing?checkout=success`);
    await expect(page.getByTestId('plan')).toHaveText('team');
    await expect(page.getByTestId('status')).toHaveText('Active');
    await expect(page.locator('li[data-plan="team"]')).toContainText('current plan');

    // A failed payment: past due, the banner here and on other screens.
    await deliver({
      id: 'evt_pw_2', object: 'event', type: 'customer.subscription.updated', created: now - 5,
      data: { object: sub('past_due') },
    });
    await page.reload();
    await expect(page.getByTestId('status')).toHaveText('Payment past due');
    await expect(page.getByTestId('past-due')).toBeVisible();
    await axe(page, 'billing (past due)');
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${shots}billing.png`, fullPage: true });
    await nav(page, 'Monitors');
    await expect(page.getByTestId('past-due')).toBeVisible();

    await nav(page, 'Billing');
    await page.getByRole('button', { name: 'Manage billing' }).click();
    await expect(page).toHaveURL(`${stripeBase}/portal`);
  });
});

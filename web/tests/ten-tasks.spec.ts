// The ten everyday tasks, each done through the dashboard in a real browser against the real
// binary as a person would (elements found by role and text), counting the steps it takes:
// every click, form fill, choice in a list and tick is one. Setup that is not the task (the
// monitors a maintenance window covers, the channels an escalation notifies) goes through the
// API. docs/ten-tasks.md sets each count beside Uptime Kuma's; each test fails when the
// dashboard needs more steps than that.
import { expect, test, type Page } from '@playwright/test';
import { BASE, report, rest, shots, signUp, Steps, TARGET } from './helpers';

test.describe.configure({ mode: 'serial' });

let page: Page;
const counts = new Map<string, number>();
/** A new monitor's first check comes within its interval (60 s by default), spread out. */
const FIRST_CHECK = 75_000;
const nav = (name: string) => page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true });

/** Records the steps of `task` and holds them to Uptime Kuma's count for the same task. */
function done(task: string, s: Steps, kuma: number | null) {
  counts.set(task, s.n);
  if (kuma !== null) expect(s.n, `${task}: ${s.n} steps, Uptime Kuma ${kuma}`).toBeLessThanOrEqual(kuma);
}

test.beforeAll(async ({ browser }) => {
  const ctx = await browser.newContext();
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE() });
  page = await ctx.newPage();
  await signUp(page, 'Kim');
});

test.afterAll(() => report(counts));

test('1. the first HTTP monitor', async () => {
  test.setTimeout(150_000);
  const s = new Steps();
  await s.click(page.getByRole('link', { name: 'Create your first monitor' }));
  await s.fill(page.getByLabel('URL'), `${TARGET()}/`);
  await s.click(page.getByRole('button', { name: 'Create monitor' }));
  // Named after its host, and checked at once.
  await expect(page.getByRole('heading', { level: 1 })).toContainText('127.0.0.1');
  await expect(page.getByText('UP', { exact: true }).first()).toBeVisible({ timeout: FIRST_CHECK });
  done('first HTTP monitor', s, 3);
});

test('2. a keyword check and a JSON check', async () => {
  test.setTimeout(240_000);
  await page.goto('/app/');
  let s = new Steps();
  await s.click(page.getByRole('link', { name: 'New monitor' }));
  await s.fill(page.getByLabel('URL'), `${TARGET()}/`);
  await s.fill(page.getByLabel('Response must contain'), 'all good');
  await s.click(page.getByRole('button', { name: 'Create monitor' }));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('127.0.0.1');
  await expect(page.getByText('UP', { exact: true }).first()).toBeVisible({ timeout: FIRST_CHECK });
  done('keyword check', s, 5);

  await page.goto('/app/');
  s = new Steps();
  await s.click(page.getByRole('link', { name: 'New monitor' }));
  await s.fill(page.getByLabel('URL'), `${TARGET()}/__json`);
  await s.fill(page.getByLabel('JSON path'), '$.status');
  await s.fill(page.getByLabel('Must equal'), 'ok');
  await page.getByLabel('Must equal').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${shots}monitor-form-json-check.png` });
  await s.click(page.getByRole('button', { name: 'Create monitor' }));
  await expect(page.getByText('UP', { exact: true }).first()).toBeVisible({ timeout: FIRST_CHECK });
  done('JSON check', s, 6);
  const all = (await rest(page, 'GET', '/monitors')) as { url: string; config: { assertions?: unknown[] } }[];
  expect(all.find((m) => m.url.endsWith('/__json'))!.config.assertions).toEqual([
    expect.objectContaining({ target: 'jsonPath', operator: 'eq', property: '$.status', value: 'ok' }),
  ]);
  expect(all.find((m) => m.config.assertions?.length && !m.url.endsWith('/__json'))!.config.assertions).toEqual([
    expect.objectContaining({ target: 'body', operator: 'contains', value: 'all good' }),
  ]);
});

test('3. a heartbeat for a cron job', async () => {
  await page.goto('/app/');
  const s = new Steps();
  await s.click(page.getByRole('link', { name: 'New monitor' }));
  await s.select(page.getByLabel('Type'), 'PUSH');
  await s.fill(page.getByLabel('Expected every (seconds)'), '3600');
  await s.click(page.getByRole('button', { name: 'Create monitor' }));
  await expect(page.getByRole('heading', { name: 'Push monitor created' })).toBeVisible();
  await s.click(page.getByRole('button', { name: 'Copy URL' }));
  done('cron heartbeat', s, 5);
  const url = await page.evaluate(() => navigator.clipboard.readText());
  expect(url).toMatch(new RegExp(`^${BASE()}/push/`));
  expect((await fetch(url, { method: 'POST' })).status).toBe(202);
});

test('4. a Telegram channel set up, then changed', async () => {
  await page.goto('/app/');
  const s = new Steps();
  await s.click(nav('Channels'));
  const form = page.getByRole('form', { name: 'New channel' });
  await s.select(form.getByLabel('Type'), 'TELEGRAM');
  await s.fill(form.getByLabel('Bot token (required)'), '123:abc');
  await s.fill(form.getByLabel('Chat (required)'), '-100200');
  await s.click(form.getByRole('button', { name: 'Create channel' }));
  const card = page.getByRole('article', { name: /Telegram/ });
  await expect(card).toBeVisible();
  await s.click(card.getByRole('button', { name: 'Edit Telegram' }));
  const edit = page.getByRole('form', { name: 'Edit Telegram' });
  await s.fill(edit.getByLabel('Chat (required)'), '@ops_room');
  await s.click(edit.getByRole('button', { name: 'Save channel' }));
  await expect(page.getByRole('form', { name: 'Edit Telegram' })).toHaveCount(0);
  done('Telegram channel, set up then changed', s, 11);
  const channels = (await rest(page, 'GET', '/notification-channels?limit=200')).notificationChannels as { name: string; config: { chatId: unknown } }[];
  expect(channels.find((c) => c.name === 'Telegram')!.config.chatId).toBe('@ops_room');
});

test('5. an escalation policy on a monitor, and its alert acknowledged', async () => {
  for (const name of ['On-call hook', 'Manager hook']) {
    await rest(page, 'POST', '/notification-channels', { name, type: 'WEBHOOK', config: { url: `${TARGET()}/__hook` } });
  }
  await rest(page, 'POST', '/monitors', { name: 'Checkout', type: 'HTTP', url: `${TARGET()}/__down`, interval: 2, timeout: 1 });
  await page.goto('/app/');
  const s = new Steps();
  await s.click(nav('Escalation'));
  const form = page.getByRole('form', { name: 'New escalation policy' });
  await s.fill(form.getByLabel('Policy name'), 'Checkout on call');
  await s.check(form.getByRole('group', { name: 'Step 1: notify' }).getByRole('checkbox', { name: /On-call hook/ }));
  await s.click(form.getByRole('button', { name: 'Add a step' }));
  await s.check(form.getByRole('group', { name: 'Step 2: notify' }).getByRole('checkbox', { name: /Manager hook/ }));
  await s.click(form.getByRole('button', { name: 'Create policy' }));
  await expect(page.getByRole('heading', { name: 'Checkout on call' })).toBeVisible();
  await s.click(nav('Monitors'));
  await s.click(page.getByRole('link', { name: 'Checkout', exact: true }));
  await s.click(page.getByRole('link', { name: 'Edit', exact: true }));
  await s.select(page.getByLabel('Escalation policy'), { label: 'Checkout on call' });
  await s.click(page.getByRole('button', { name: 'Save' }));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Checkout');
  // The monitor fails; its alert opens and would climb the policy until acknowledged.
  await s.click(nav('Alerts'));
  const alert = page.locator('li.alert').filter({ hasText: 'Checkout' });
  await expect(alert).toBeVisible({ timeout: 60_000 });
  await s.click(alert.getByRole('button', { name: 'Acknowledge' }));
  await expect(page.locator('li.alert').filter({ hasText: 'Checkout' })).toHaveCount(0);
  done('acknowledge and escalate', s, null);
  const monitors = (await rest(page, 'GET', '/monitors')) as { id: string; name: string; escalationPolicyId: string | null }[];
  const checkout = monitors.find((m) => m.name === 'Checkout')!;
  expect(checkout.escalationPolicyId).not.toBeNull();
  const alerts = (await rest(page, 'GET', `/alerts?status=acknowledged`)) as any;
  const list = (Array.isArray(alerts) ? alerts : alerts.alerts) as { monitorId: string }[];
  expect(list.some((a) => a.monitorId === checkout.id)).toBe(true);
  await rest(page, 'POST', `/monitors/${checkout.id}/pause`);
});

test('6. a maintenance window for five monitors', async () => {
  const names = ['db-primary', 'db-replica', 'cache', 'queue', 'search'];
  for (const name of names) await rest(page, 'POST', '/monitors', { name, type: 'TCP', host: '127.0.0.1', port: 9, active: false });
  await page.goto('/app/');
  const s = new Steps();
  await s.click(nav('Maintenance'));
  for (const name of names) await s.check(page.getByRole('checkbox', { name, exact: true }));
  await s.fill(page.getByLabel('Title'), 'Database upgrade');
  await s.click(page.getByRole('button', { name: 'Plan window' }));
  await expect(page.locator('ul.cards > li')).toContainText('5 monitors');
  done('maintenance for five monitors', s, 11);
  const windows = (await rest(page, 'GET', '/maintenance-windows')) as { title: string; startsAt: string; endsAt: string }[];
  expect(windows).toHaveLength(5);
  // Now, for an hour, when no date is typed.
  expect(Date.parse(windows[0].endsAt) - Date.parse(windows[0].startsAt)).toBe(3_600_000);
  expect(Math.abs(Date.parse(windows[0].startsAt) - Date.now())).toBeLessThan(120_000);
});

test('7. a status page with three components', async () => {
  await page.goto('/app/');
  const s = new Steps();
  await s.click(nav('Status pages'));
  await s.fill(page.getByLabel('Name'), 'Kim Status');
  await s.click(page.getByRole('button', { name: 'Create status page' }));
  await expect(page.getByRole('heading', { name: /Kim Status/ })).toBeVisible();
  for (const name of ['Website', 'API', 'Docs']) {
    await s.fill(page.getByLabel('Component name'), name);
    await s.click(page.getByRole('button', { name: 'Add component' }));
    await expect(page.locator('[data-component-id]').filter({ hasText: name })).toBeVisible();
  }
  await s.click(page.getByRole('button', { name: 'Publish', exact: true }));
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Published');
  done('status page with three components', s, 12);
  const visitor = await (await fetch(`${BASE()}/s/kim-status`)).text();
  for (const name of ['Website', 'API', 'Docs']) expect(visitor).toContain(name);
});

test('8. an incident with two updates', async () => {
  await page.goto('/app/');
  const s = new Steps();
  await s.click(nav('Status pages'));
  await s.click(page.getByRole('link', { name: 'Kim Status' }));
  await s.fill(page.getByLabel('Title', { exact: true }), 'Slow checkout');
  await s.fill(page.getByLabel('First update'), 'Checkout takes 20 s; looking into it.');
  await s.check(page.getByRole('checkbox', { name: 'Publish on the public page now' }));
  await s.click(page.getByRole('button', { name: 'Open incident' }));
  const card = page.locator('article.incident').filter({ hasText: 'Slow checkout' });
  const history = card.getByRole('list', { name: 'Updates of Slow checkout' });
  for (const message of ['The payment provider is slow.', 'A fallback provider is live; watching.']) {
    await s.fill(card.getByLabel('Update', { exact: true }), message);
    await s.click(card.getByRole('button', { name: 'Post update' }));
    await expect(history.getByRole('listitem').first()).toContainText(message);
  }
  await expect(history.getByRole('listitem')).toHaveCount(3);
  done('incident with two updates', s, 13);
});

test('9. ten monitors paused', async () => {
  for (let i = 0; i < 10; i++) await rest(page, 'POST', '/monitors', { name: `nightly-${i}`, type: 'PUSH', interval: 3600 });
  await page.goto('/app/');
  const s = new Steps();
  await s.fill(page.getByLabel('Search', { exact: true }), 'nightly');
  await s.check(page.getByRole('checkbox', { name: 'Select all shown' }));
  const bar = page.getByRole('toolbar', { name: 'Selected monitors' });
  await s.click(bar.getByRole('button', { name: 'Pause', exact: true }));
  await expect(bar.getByRole('status')).toHaveText('Paused 10 monitors.');
  done('pause ten monitors', s, 5);
  const all = (await rest(page, 'GET', '/monitors')) as { name: string; active: boolean }[];
  expect(all.filter((m) => m.name.startsWith('nightly-') && !m.active)).toHaveLength(10);
});

test('10. the failing check found', async () => {
  const billing = await rest(page, 'POST', '/monitors', { name: 'Billing API', type: 'HTTP', url: `${TARGET()}/__down`, interval: 2, timeout: 1 });
  await expect.poll(async () => (await rest(page, 'GET', `/monitors/${billing.id}`)).status, { timeout: 60_000 }).toBe('DOWN');
  await page.goto('/app/');
  await expect(page.getByText(/\d+ monitors/).first()).toBeVisible();
  const s = new Steps();
  await s.select(page.getByLabel('Status', { exact: true }), 'DOWN');
  await s.click(page.getByRole('link', { name: 'Billing API' }));
  // The failing check and why it failed, on the monitor's page.
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Billing API');
  await expect(page.getByRole('region', { name: 'Recent checks' })).toContainText('500');
  done('find a failing check', s, 3);
});

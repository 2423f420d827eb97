// Everyday work in a real browser against the real binary: the acknowledge link's page
// (styled, light and dark, then the alert link landing on the dashboard's alert page), the
// pages people reach from broken links, a maintenance window across three monitors (cron
// schedule with its next starts in words, excluded from uptime; then edited down to two), a
// status page whose slug follows its name with no console error, components added without a
// false "order has changed", and an incident with a severity, two updates, a closing message
// and its update history. Axe (no serious or critical violation) on each, light and dark.
import { expect, test, type Page } from '@playwright/test';
import { axe, axeBoth, rest, shot, shots, TARGET } from './helpers';

const EMAIL = `mo+${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';

const nav = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

test.describe.configure({ mode: 'serial' });

let page: Page;
/** Console errors and CSP refusals: none is expected anywhere. */
const consoleErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.on('console', (m) => {
    // Error pages (a broken link's 400, a missing page's 404) are expected answers, not faults.
    if (m.text().startsWith('Failed to load resource')) return;
    if (m.type() === 'error' || m.text().includes('Content Security Policy')) consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Mo');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
});

test('the acknowledge link opens a styled page, and the alert link the dashboard', async () => {
  const channel = await rest(page, 'POST', '/notification-channels', {
    name: 'Hook', type: 'WEBHOOK', config: { url: `${TARGET()}/__hook` },
  });
  const monitor = await rest(page, 'POST', '/monitors', {
    name: 'Payments API', type: 'HTTP', url: `${TARGET()}/__down`, interval: 2, timeout: 1, notificationChannelIds: [channel.id],
  });
  // The webhook's alert.opened for this monitor carries both links.
  let links: { acknowledge: string; alert: string } | undefined;
  await expect
    .poll(
      async () => {
        const hooks = (await (await fetch(`${TARGET()}/__hooks`)).json()) as any[];
        links = hooks.find((h) => h.type === 'alert.opened' && h.data?.monitor?.id === monitor.id)?.data?.links;
        return Boolean(links);
      },
      { timeout: 60_000 },
    )
    .toBe(true);

  // A fresh context: the person following the link from a chat need not be signed in.
  const other = await page.context().browser()!.newContext();
  const visitor = await other.newPage();
  await visitor.goto(links!.acknowledge);
  await expect(visitor.getByRole('heading', { name: 'Acknowledge this alert?' })).toBeVisible();
  await expect(visitor.getByText('Payments API is down')).toBeVisible();
  // Styled: the button wears the brand colour, not the browser's grey.
  const bg = await visitor.getByRole('button', { name: 'Acknowledge' }).evaluate((b) => getComputedStyle(b).backgroundColor);
  expect(bg).toBe('rgb(11, 92, 173)');
  await axeBoth(visitor, 'acknowledge page');
  await visitor.emulateMedia({ colorScheme: 'dark' });
  const dark = await visitor.locator('main').evaluate((m) => getComputedStyle(m).backgroundColor);
  expect(dark).toBe('rgb(21, 27, 35)');
  await visitor.screenshot({ path: `${shots}acknowledge-dark.png` });
  await visitor.emulateMedia({ colorScheme: 'light' });
  await visitor.screenshot({ path: `${shots}acknowledge.png` });
  await visitor.getByRole('button', { name: 'Acknowledge' }).click();
  await expect(visitor.getByRole('heading', { name: 'Alert acknowledged' })).toBeVisible();
  await other.close();

  // The alert link, opened in the signed-in browser, is the dashboard's alert page.
  await page.goto(links!.alert);
  await expect(page).toHaveURL(/\/app\/alerts\/[^/]+$/);
  await expect(page.getByRole('heading', { name: /Alert: Payments API/ })).toBeVisible();
  await expect(page.getByText('ACKNOWLEDGED', { exact: true })).toBeVisible();
  await expect(page.getByText(/acknowledged .* by link/)).toBeVisible();
  await axe(page, 'alert page');
  await rest(page, 'POST', `/monitors/${monitor.id}/pause`);
});

test('pages reached from broken links wear the same layout', async () => {
  for (const [path, heading] of [
    ['/alerts/ack?token=nope', 'Link not valid'],
    ['/api/v1/subscribers/verify?token=nope', 'Link not valid'],
    ['/auth/verify-email?token=nope', 'Link not valid'],
    ['/s/no-such-page', 'Status page not found'],
  ]) {
    await page.goto(path);
    await expect(page.getByRole('heading', { name: heading })).toBeVisible();
    await expect(page.getByRole('banner')).toContainText('Tocsin');
    await axeBoth(page, path);
  }
});

test('a maintenance window across three monitors is planned, then edited', async () => {
  for (const name of ['Web', 'API', 'Worker']) {
    await rest(page, 'POST', '/monitors', { name, type: 'TCP', host: '127.0.0.1', port: 9, active: false });
  }
  await page.goto('/app/');
  await nav(page, 'Maintenance');
  await expect(page.getByRole('heading', { name: 'No maintenance windows' })).toBeVisible();
  for (const name of ['Web', 'API', 'Worker']) await page.getByRole('checkbox', { name, exact: true }).check();
  await page.getByLabel('Title').fill('Database upgrade');
  await page.getByLabel('Time zone').fill('Europe/Berlin');
  await page.getByLabel('Starts').fill('2030-01-06T02:00');
  await page.getByLabel('Ends').fill('2030-01-06T04:00');
  await page.getByLabel('Repeats').selectOption('cron');
  await page.getByLabel('Cron expression').fill('0 2 * * 0');
  // The next starts, in words, in the window's zone.
  const next = page.locator('.next-starts li');
  await expect(next).toHaveCount(3);
  await expect(next.first()).toContainText('Sunday');
  await expect(next.first()).toContainText('2030');
  await expect(next.first()).toContainText('for 2 hours');
  await page.getByRole('checkbox', { name: 'Exclude from uptime' }).check();
  await axe(page, 'maintenance form');
  await page.getByRole('button', { name: 'Plan window' }).click();
  const card = page.locator('ul.cards > li');
  await expect(card).toHaveCount(1);
  await expect(card).toContainText('3 monitors: Web, API, Worker');
  await expect(card).toContainText('excluded from uptime');
  await expect(card).toContainText('Next: Sunday');
  let windows = (await rest(page, 'GET', '/maintenance-windows')) as any[];
  expect(windows).toHaveLength(3);
  expect(windows.every((w) => w.excludeFromUptime && w.recurring?.expression === '0 2 * * 0' && w.timezone === 'Europe/Berlin')).toBe(true);
  expect(windows[0].startsAt).toBe('2030-01-06T01:00:00.000Z');

  // Edit: a new title, Worker out.
  await page.getByRole('button', { name: 'Edit Database upgrade' }).click();
  await expect(page.getByRole('heading', { name: 'Edit “Database upgrade”' })).toBeVisible();
  await expect(page.getByLabel('Starts')).toHaveValue('2030-01-06T02:00');
  await page.getByRole('checkbox', { name: 'Worker', exact: true }).uncheck();
  await page.getByLabel('Title').fill('Database upgrade (primary)');
  await page.getByRole('button', { name: 'Save window' }).click();
  await expect(card).toHaveCount(1);
  await expect(card).toContainText('Database upgrade (primary)');
  await expect(card).toContainText('2 monitors: Web, API');
  windows = (await rest(page, 'GET', '/maintenance-windows')) as any[];
  expect(windows.map((w) => w.title)).toEqual(['Database upgrade (primary)', 'Database upgrade (primary)']);
  await axeBoth(page, 'maintenance');
  await shot(page, 'maintenance');
});

test('a status page: the slug follows the name, components add without a false reorder', async () => {
  await nav(page, 'Status pages');
  const before = consoleErrors.length;
  await page.getByLabel('Name').fill('Acme Cloud Status');
  await expect(page.getByLabel('Address (slug)')).toHaveValue('acme-cloud-status');
  // The pattern compiles (v flag) and matches: the form is valid, nothing in the console.
  expect(await page.getByLabel('Address (slug)').evaluate((i: HTMLInputElement) => i.checkValidity())).toBe(true);
  expect(consoleErrors.slice(before)).toEqual([]);
  await page.getByRole('button', { name: 'Create status page' }).click();
  await expect(page.getByRole('heading', { name: /Acme Cloud Status/ })).toBeVisible();
  for (const [name, group] of [['Website', 'Public'], ['API', ''], ['Docs', 'Public']]) {
    await page.getByLabel('Component name').fill(name);
    await page.getByLabel('Group (optional)').fill(group);
    await page.getByRole('button', { name: 'Add component' }).click();
    await expect(page.locator('[data-component-id]').filter({ hasText: name })).toBeVisible();
    await expect(page.getByText('The order has changed.')).toHaveCount(0);
  }
});

test('an incident with a severity, two updates, a closing message and its history', async () => {
  await page.getByLabel('Title', { exact: true }).fill('Slow logins');
  await page.getByLabel('First update').fill('Logins take 30 s; looking into it.');
  await page.getByLabel('Severity').selectOption('MAJOR');
  await page.getByRole('button', { name: 'Open incident' }).click();
  const card = page.locator('article.incident').filter({ hasText: 'Slow logins' });
  await expect(card).toContainText('Major severity');
  const history = card.getByRole('list', { name: 'Updates of Slow logins' });
  await expect(history.getByRole('listitem')).toHaveCount(1);
  for (const [message, status] of [['The session store is overloaded.', 'IDENTIFIED'], ['A fix is out; watching.', 'MONITORING']]) {
    await card.getByLabel('Update', { exact: true }).fill(message);
    await card.getByLabel('New status').selectOption(status);
    await card.getByRole('button', { name: 'Post update' }).click();
    await expect(history.getByRole('listitem').first()).toContainText(message);
  }
  await expect(history.getByRole('listitem')).toHaveCount(3);
  // Resolving asks for the closing message.
  await card.getByRole('button', { name: 'Resolve…' }).click();
  await card.getByLabel('Closing message').fill('Logins are fast again.');
  await card.getByRole('button', { name: 'Resolve incident' }).click();
  await expect(card.getByText('RESOLVED', { exact: true }).first()).toBeVisible();
  await expect(history.getByRole('listitem')).toHaveCount(4);
  await expect(history.getByRole('listitem').first()).toContainText('Logins are fast again.');
  await axeBoth(page, 'status page with incident');
  await card.scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${shots}incident-history.png` });
  expect(consoleErrors).toEqual([]);
});

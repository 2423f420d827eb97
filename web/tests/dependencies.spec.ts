// Monitor dependencies in a real browser against the real binary, as a fresh user: a root and
// two dependents created through the REST API (one of them picks its dependency in the monitor
// form); the root's target goes down, then theirs: the alert list shows the dependents' alerts
// "suppressed by" the root (and hides them under "Roots only"), and the monitors' detail pages
// say what depends on what. Axe runs on the alert list.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, rest } from './helpers';

const EMAIL = `deps+${Date.now()}@example.com`;
const TARGET = process.env.TARGET_URL!;

/** Checks every 2 s, failing at the first: the shared target's `/__down` always fails. */
const monitorBody = (name: string, path: string, extra: Record<string, unknown> = {}) => ({
  name, type: 'HTTP', url: `${TARGET}${path}`, interval: 2, timeout: 1, ...extra,
});

async function openAlert(page: Page, monitorId: string) {
  const list = await rest(page, 'GET', `/alerts?monitorId=${monitorId}`);
  return (list.alerts as Record<string, unknown>[]).find((a) => a.status !== 'RESOLVED');
}

test.describe.configure({ mode: 'serial' });

let page: Page;
const ids: Record<string, string> = {};

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Dee');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  ids.db = (await rest(page, 'POST', '/monitors', monitorBody('Orders DB', '/'))).id as string;
  ids.api = (await rest(page, 'POST', '/monitors', monitorBody('Orders API', '/', { dependsOn: [ids.db] }))).id as string;
  ids.web = (await rest(page, 'POST', '/monitors', monitorBody('Orders web', '/'))).id as string;
});

test.afterAll(async () => {
  for (const id of [ids.web, ids.api, ids.db]) if (id) await rest(page, 'DELETE', `/monitors/${id}`);
});

test('a dependency is picked in the monitor form', async () => {
  await page.goto(`/app/monitors/${ids.web}/edit`);
  const picker = page.getByRole('group', { name: 'Depends on' });
  await expect(picker.getByRole('checkbox', { name: /Orders web/ })).toHaveCount(0);
  await picker.getByRole('checkbox', { name: /Orders DB/ }).check();
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.getByTestId('monitor-dependencies')).toHaveText('Depends on: Orders DB');
  expect((await rest(page, 'GET', `/monitors/${ids.web}`)).dependsOn).toEqual([ids.db]);
});

test("the dependents' alerts show as suppressed by the root", async () => {
  // The root's target goes down first; its alert opens.
  await rest(page, 'PATCH', `/monitors/${ids.db}`, { url: `${TARGET}/__down` });
  await expect.poll(async () => (await openAlert(page, ids.db))?.rootCauseAlertId, { timeout: 30_000 }).toBeNull();
  const root = (await openAlert(page, ids.db))!;
  // Then what depends on it: their alerts open under the root's.
  for (const id of [ids.api, ids.web]) await rest(page, 'PATCH', `/monitors/${id}`, { url: `${TARGET}/__down` });
  for (const id of [ids.api, ids.web]) {
    await expect.poll(async () => (await openAlert(page, id))?.rootCauseAlertId, { timeout: 30_000 }).toBe(root.id);
  }

  await page.goto('/app/alerts');
  const card = (monitorName: string) =>
    page.locator('li.card.alert').filter({ has: page.getByRole('heading').getByRole('link', { name: monitorName, exact: true }) });
  for (const name of ['Orders API', 'Orders web']) {
    await expect(card(name).getByTestId('suppressed-by')).toContainText('Suppressed by Orders DB');
    await expect(card(name).getByTestId('suppressed-by').getByRole('link', { name: 'Orders DB' })).toHaveAttribute(
      'href',
      new RegExp(`/monitors/${ids.db}$`),
    );
  }
  await expect(card('Orders DB')).toBeVisible();
  await expect(card('Orders DB').getByTestId('suppressed-by')).toHaveCount(0);
  await axe(page, 'alert list');

  // Roots only: the one outage.
  await page.getByLabel(/Roots only/).check();
  await expect(page.locator('li.card.alert')).toHaveCount(1);
  await expect(card('Orders DB')).toBeVisible();

  // The detail pages say what depends on what.
  await page.goto(`/app/monitors/${ids.db}`);
  await expect(page.getByTestId('monitor-dependencies')).toHaveText('Dependents: Orders API, Orders web');
  await page.goto(`/app/monitors/${ids.api}`);
  await expect(page.getByTestId('monitor-dependencies')).toHaveText('Depends on: Orders DB');
});

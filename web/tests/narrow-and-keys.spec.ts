// API key presets (one click for a common set of capabilities, then a key minted with it) and
// the dashboard at 360 px: the navigation folds behind a menu button, and on the main screens
// no visible element reaches outside the viewport (each element's bounds are checked, except
// inside the containers that scroll sideways on purpose: tables, code blocks). Axe on each.
import { expect, test, type Page } from '@playwright/test';
import { axe, BASE as base, cutOff, rest, shots } from './helpers';

const EMAIL = `nora+${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';

test.describe.configure({ mode: 'serial' });

let page: Page;
let monitorId = '';

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Nora');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  const m = await rest(page, 'POST', '/monitors', { name: 'A rather long monitor name for a phone', type: 'PUSH', interval: 300 });
  monitorId = m.id;
  await fetch(`${base()}/push/${m.pushToken}`, { method: 'POST' });
});

test('an API key from a preset, in one click', async () => {
  await page.goto('/app/api-keys');
  const presets = page.getByRole('group', { name: 'Presets' });
  const boxes = page.getByRole('group', { name: 'Capabilities' }).getByRole('checkbox');
  await presets.getByRole('button', { name: 'Everything' }).click();
  await expect(presets.getByRole('button', { name: 'Everything' })).toHaveAttribute('aria-pressed', 'true');
  await expect(boxes.and(page.locator(':checked'))).toHaveCount(17);
  await presets.getByRole('button', { name: 'Read only' }).click();
  await expect(boxes.and(page.locator(':checked'))).toHaveCount(6);
  await expect(page.getByRole('checkbox', { name: 'monitors:write' })).not.toBeChecked();
  await presets.getByRole('button', { name: 'Monitors and alerts' }).click();
  await expect(page.getByRole('checkbox', { name: 'monitors:write' })).toBeChecked();
  await expect(page.getByRole('checkbox', { name: 'status_pages:write' })).not.toBeChecked();
  await axe(page, 'api keys with a preset');
  await page.getByLabel('Name').fill('on-call bot');
  await page.getByRole('button', { name: 'Mint key' }).click();
  await expect(page.getByTestId('new-secret')).toBeVisible();
  const keys = (await rest(page, 'GET', '/api-keys')) as { name: string; permissions: string[] }[];
  expect(keys.find((k) => k.name === 'on-call bot')!.permissions.sort()).toEqual(
    ['identity:read', 'maintenance:write', 'monitors:delete', 'monitors:read', 'monitors:write', 'notifications:read', 'notifications:write'],
  );
});

test('at 360 px: a menu for the navigation, and nothing cut off on the main screens', async () => {
  await page.setViewportSize({ width: 360, height: 740 });
  await page.goto('/app/');
  const nav = page.getByRole('navigation', { name: 'Main' });
  const menu = page.getByRole('button', { name: 'Menu' });
  await expect(nav).toBeHidden();
  await expect(menu).toHaveAttribute('aria-expanded', 'false');
  await page.screenshot({ path: `${shots}narrow-monitors.png` });
  await menu.click();
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(nav.getByRole('link', { name: 'API keys' })).toBeVisible();
  expect(await page.evaluate(cutOff)).toEqual([]);
  await axe(page, 'menu open at 360 px');
  await page.screenshot({ path: `${shots}narrow-menu.png` });
  await nav.getByRole('link', { name: 'API keys' }).click();
  await expect(page.getByRole('heading', { name: 'API keys', level: 1 })).toBeVisible();
  await expect(nav).toBeHidden();

  for (const [path, heading] of [
    ['/app/', 'Monitors'],
    [`/app/monitors/${monitorId}`, 'A rather long monitor name for a phone'],
    ['/app/monitors/new', 'New monitor'],
    ['/app/api-keys', 'API keys'],
    ['/app/alerts', 'Alerts'],
    ['/app/status-pages', 'Status pages'],
    ['/app/channels', 'Notification channels'],
    ['/app/maintenance', 'Maintenance'],
  ]) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1 })).toContainText(heading);
    // Let the screen's data arrive before measuring.
    await page.waitForTimeout(500);
    expect(await page.evaluate(cutOff), path).toEqual([]);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
});

// API key presets (one click for a common set of capabilities, then a key minted with it) and
// the dashboard at 360 px: the navigation folds behind a menu button, and on the main screens
// no visible element reaches outside the viewport (each element's bounds are checked, except
// inside the containers that scroll sideways on purpose: tables, code blocks). Axe on each.
import AxeBuilder from '@axe-core/playwright';
import { expect, test, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const shots = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
mkdirSync(shots, { recursive: true });

const EMAIL = `nora+${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';
const base = () => process.env.TOCSIN_URL!;

async function axe(page: Page, screen: string) {
  const results = await new AxeBuilder({ page }).setLegacyMode().analyze();
  const bad = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${screen}: ${v.id} ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`)).toEqual([]);
}

async function rest(page: Page, method: string, path: string, body?: unknown): Promise<any> {
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const r = await fetch(`${base()}${path}`, {
    method,
    headers: { cookie, origin: base(), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(r.ok, `${method} ${path}: ${r.status} ${await r.clone().text()}`).toBe(true);
  return r.json();
}

/** Visible elements whose box leaves the viewport sideways, outside sideways scrollers. */
function cutOff(): string[] {
  const width = document.documentElement.clientWidth;
  const out: string[] = [];
  const scrolls = (el: Element | null): boolean => {
    for (let e = el; e && e !== document.body; e = e.parentElement) {
      const o = getComputedStyle(e).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || el.closest('.sr-only, .skip')) continue;
    if (scrolls(el.parentElement)) continue;
    if (r.left < -1 || r.right > width + 1) {
      const name = `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : ''}`;
      out.push(`${name} [${Math.round(r.left)}, ${Math.round(r.right)}] "${(el.textContent ?? '').trim().slice(0, 30)}"`);
    }
  }
  return out;
}

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

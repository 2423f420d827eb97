// The public status page /s/{slug} in a real browser against the real binary, in each of its
// five statuses (OPERATIONAL, DEGRADED, PARTIAL_OUTAGE, MAJOR_OUTAGE, MAINTENANCE), light and
// dark: axe finds nothing serious (colour contrast included), the overall banner and every
// component's status are drawn in a colour (never white or transparent) that differs from
// status to status, and the page names the status in words; the dashboard's branding preview
// names a partial outage as the page does. Takes docs/status-page.png.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, rest } from './helpers';
import { fileURLToPath } from 'node:url';

const docs = fileURLToPath(new URL('../../docs/', import.meta.url));
const EMAIL = `pat+${Date.now()}@example.com`;
const RUN = Date.now() % 100000;

type Status = 'OPERATIONAL' | 'DEGRADED' | 'PARTIAL_OUTAGE' | 'MAJOR_OUTAGE' | 'MAINTENANCE';
const HEADLINES: Record<Status, string> = {
  OPERATIONAL: 'All systems operational',
  DEGRADED: 'Some systems are degraded',
  PARTIAL_OUTAGE: 'Partial system outage',
  MAJOR_OUTAGE: 'Major system outage',
  MAINTENANCE: 'Maintenance in progress',
};
const STATUSES = Object.keys(HEADLINES) as Status[];

const isBlank = (c: string) => c === 'rgba(0, 0, 0, 0)' || c === 'transparent' || c === 'rgb(255, 255, 255)';

test.describe.configure({ mode: 'serial' });

let page: Page;
const slugs = {} as Record<Status, string>;

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Pat');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();

  // A monitor in a maintenance window, for the page under maintenance.
  const monitor = await rest(page, 'POST', '/monitors', {
    name: 'Held API', type: 'HTTP', url: `${process.env.TARGET_URL}/health`, interval: 60, timeout: 5,
  });
  await rest(page, 'POST', '/maintenance-windows', {
    monitorId: monitor.id, title: 'Database upgrade',
    startsAt: new Date(Date.now() - 60_000).toISOString(), endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  });

  for (const status of STATUSES) {
    const slug = `${status.toLowerCase().replace('_', '-')}-${RUN}`;
    slugs[status] = slug;
    const p = await rest(page, 'POST', '/status-pages', { name: 'Acme', slug, published: true });
    const comps = await rest(page, 'PUT', `/status-pages/${p.id}/components`, [
      { name: 'Public API', group: 'Core', monitorId: status === 'MAINTENANCE' ? monitor.id : null },
      { name: 'Website', group: 'Core', monitorId: null },
    ]);
    const [api, web] = comps.map((c: { id: string }) => c.id);
    const incident = (title: string, severity: string, affected: string[], message: string) =>
      rest(page, 'POST', '/incidents', {
        statusPageId: p.id, title, severity, visibility: 'PUBLISHED', affectedComponentIds: affected, message,
      });
    if (status === 'DEGRADED') await incident('Slow logins', 'MINOR', [api], 'Logins take a few seconds longer than usual.');
    if (status === 'PARTIAL_OUTAGE') await incident('API errors', 'CRITICAL', [api], 'Requests to the API fail; the website is fine.');
    if (status === 'MAJOR_OUTAGE') await incident('Everything is down', 'CRITICAL', [api, web], 'Nothing answers. We are on it.');
  }
  for (const status of STATUSES) {
    await expect
      .poll(async () => (await (await page.request.get(`/api/v1/status-pages/${slugs[status]}/summary`)).json()).status, {
        message: `${status} page`,
      })
      .toBe(status);
  }
});

for (const scheme of ['light', 'dark'] as const) {
  test(`every status reads in colour and passes axe, ${scheme}`, async () => {
    await page.emulateMedia({ colorScheme: scheme });
    const banners: Record<string, string> = {};
    for (const status of STATUSES) {
      await page.goto(`/s/${slugs[status]}`);
      const banner = page.locator('section.overall');
      await expect(banner).toHaveClass(/\boverall\b/);
      await expect(banner.getByRole('heading', { level: 2 })).toHaveText(HEADLINES[status]);
      const bg = await banner.evaluate((e) => getComputedStyle(e).backgroundColor);
      expect(isBlank(bg), `${status} banner background ${bg}`).toBe(false);
      banners[status] = bg;
      for (const pill of await page.locator('.component .st').all()) {
        const pillBg = await pill.evaluate((e) => getComputedStyle(e).backgroundColor);
        expect(isBlank(pillBg), `${status} component status ${await pill.textContent()}: ${pillBg}`).toBe(false);
      }
      await axe(page, `${status} ${scheme}`, { contrastJudged: true });
      if (status === 'PARTIAL_OUTAGE' && scheme === 'light') {
        await page.screenshot({ path: `${docs}status-page.png`, fullPage: true });
      }
    }
    // Each status has its own colour.
    expect(new Set(Object.values(banners)).size, JSON.stringify(banners)).toBe(STATUSES.length);
  });
}

test('the branding preview names the overall status as the page does', async () => {
  await page.emulateMedia({ colorScheme: 'light' });
  // A monitor of a port nobody listens on goes DOWN; a page with it and a healthy component
  // is a partial outage, on the page and in the preview alike.
  const down = await rest(page, 'POST', '/monitors', {
    name: 'Dead port', type: 'HTTP', url: 'http://127.0.0.1:9/', interval: 2, timeout: 1,
  });
  const slug = `preview-${RUN}`;
  const p = await rest(page, 'POST', '/status-pages', { name: 'Preview', slug, published: true });
  await rest(page, 'PUT', `/status-pages/${p.id}/components`, [
    { name: 'Broken', monitorId: down.id },
    { name: 'Fine', monitorId: null },
  ]);
  await expect
    .poll(async () => (await (await page.request.get(`/api/v1/status-pages/${slug}/summary`)).json()).status, { timeout: 60_000 })
    .toBe('PARTIAL_OUTAGE');
  await page.goto(`/s/${slug}`);
  const headline = (await page.locator('section.overall h2').textContent())!.trim();
  const labels = (await page.locator('.component .st').allTextContents()).map((s) => s.trim());
  expect(headline).toBe(HEADLINES.PARTIAL_OUTAGE);

  await page.goto(`/app/status-pages/${p.id}`);
  await page.getByRole('link', { name: 'Branding' }).click();
  const preview = page.getByTestId('branding-preview');
  await expect(preview.locator('.overall h2')).toHaveText(headline);
  await expect(preview.locator('.overall')).toHaveClass(/\bs-part\b/);
  await expect(preview.locator('.st')).toHaveText(labels);
});

test('a page turned private suspends its subscribers, and the list re-admits them', async () => {
  const slug = `turning-${RUN}`;
  const p = await rest(page, 'POST', '/status-pages', { name: 'Turning', slug, published: true });
  const r = await fetch(`${process.env.TOCSIN_URL}/api/v1/status-pages/${slug}/subscribers`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'reader@example.com' }),
  });
  expect(r.status).toBe(202);
  const changed = await page.request.fetch(`${process.env.TOCSIN_URL}/status-pages/${p.id}`, {
    method: 'PATCH',
    headers: { origin: process.env.TOCSIN_URL! },
    data: { access: { visibility: 'PASSWORD', password: 'a long page password' } },
  });
  expect(changed.ok(), await changed.text()).toBe(true);
  // Strangers can no longer subscribe.
  const refused = await fetch(`${process.env.TOCSIN_URL}/api/v1/status-pages/${slug}/subscribers`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'eve@example.com' }),
  });
  expect(refused.status).toBe(404);

  await page.goto(`/app/status-pages/${p.id}`);
  await page.getByRole('link', { name: 'Subscribers' }).click();
  const row = page.locator('tr', { hasText: 'reader@example.com' });
  await expect(row).toContainText('SUSPENDED');
  await axe(page, 'suspended subscriber', { contrastJudged: true });
  await row.getByRole('button', { name: 'Re-admit reader@example.com' }).click();
  await expect(row).toContainText('PENDING');
  await expect(row.getByRole('button', { name: 'Re-admit reader@example.com' })).toHaveCount(0);
});

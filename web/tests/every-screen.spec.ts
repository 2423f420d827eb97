// Every dashboard screen, walked from one list of routes (each route of web/src/app.tsx and
// each status-page tab) for a workspace with something on every screen: axe finds no serious
// or critical violation, colour contrast included, in the light and the dark scheme; at 360 px
// no element of a main screen reaches outside the viewport and the page does not scroll
// sideways. The pages people reach from a link, an email or a form rather than the dashboard's
// navigation (OAuth consent, an invitation, the public status page, subscribing, confirming and
// leaving a subscription, acknowledging an alert, email verification, broken links) get the
// same two checks, in both schemes and at 360 px. Then the monitor chart's times are in the workspace's time zone, not the
// browser's.
import { expect, test, type Page } from '@playwright/test';
import { axeViolations, cutOff, rest, shot, signUp, TARGET } from './helpers';
import { linkIn } from './mail';

test.describe.configure({ mode: 'serial' });

let page: Page;
const ids: Record<string, string> = {};
let slug = '';

/** [path, a heading the screen shows, whether it is a main screen for the 360 px check]. */
function routes(): [string, RegExp, boolean][] {
  return [
    ['/app/', /Monitors/, true],
    ['/app/monitors/new', /New monitor/, true],
    [`/app/monitors/${ids.http}`, /Shop front/, true],
    [`/app/monitors/${ids.push}`, /Nightly backup/, false],
    [`/app/monitors/${ids.http}/edit`, /Edit Shop front/, true],
    ['/app/alerts', /Alerts/, true],
    [`/app/alerts/${ids.alert}`, /Alert: Shop front/, true],
    ['/app/channels', /Notification channels/, true],
    ['/app/escalation', /Escalation policies/, true],
    ['/app/maintenance', /Maintenance/, true],
    ['/app/status-pages', /Status pages/, true],
    [`/app/status-pages/${ids.page}`, /Every Screen Status/, true],
    [`/app/status-pages/${ids.page}/branding`, /Branding/, true],
    [`/app/status-pages/${ids.page}/postmortems`, /Postmortems/, true],
    [`/app/status-pages/${ids.page}/postmortems/${ids.postmortem}`, /Edit postmortem/, false],
    [`/app/status-pages/${ids.page}/subscribers`, /Subscribers/, true],
    [`/app/status-pages/${ids.page}/embed`, /Embed/, true],
    ['/app/projects', /Projects/, true],
    ['/app/api-keys', /API keys/, true],
    ['/app/workspace', /Workspace/, true],
    ['/app/mcp-grants', /MCP/, true],
    ['/app/billing', /Billing/, true],
    ['/app/settings', /Settings/, true],
    ['/app/no-such-screen', /Not found/, false],
  ];
}

async function open(path: string, heading: RegExp) {
  await page.goto(path);
  await expect(page.getByRole('heading', { level: 1 })).toContainText(new RegExp(heading.source, 'i'));
  // The screen's data arrives after its heading.
  await page.waitForLoadState('networkidle').catch(() => undefined);
  await expect(page.locator('[aria-busy="true"]')).toHaveCount(0);
}

test.beforeAll(async ({ browser }) => {
  test.setTimeout(120_000);
  page = await (await browser.newContext()).newPage();
  await signUp(page, 'Eve');
  const hook = await rest(page, 'POST', '/notification-channels', { name: 'Ops hook', type: 'WEBHOOK', config: { url: `${TARGET()}/__hook` } });
  await rest(page, 'POST', '/escalation-policies', { name: 'Ops', steps: [{ delayMinutes: 0, notificationChannelIds: [hook.id] }] });
  await rest(page, 'POST', '/projects', { name: 'Storefront' });
  const http = await rest(page, 'POST', '/monitors', {
    name: 'Shop front', type: 'HTTP', url: `${TARGET()}/__down`, interval: 2, timeout: 1, notificationChannelIds: [hook.id],
  });
  ids.http = http.id;
  const push = await rest(page, 'POST', '/monitors', { name: 'Nightly backup', type: 'PUSH', interval: 3600 });
  ids.push = push.id;
  await fetch(`${process.env.TOCSIN_URL}/push/${push.pushToken}`, { method: 'POST' });
  await rest(page, 'POST', '/maintenance-windows', {
    title: 'Router swap', monitorId: push.id, startsAt: '2031-01-01T01:00:00Z', endsAt: '2031-01-01T02:00:00Z', timezone: 'UTC',
  });
  await rest(page, 'POST', '/api-keys', { name: 'ci', permissions: ['monitors:read'] });
  slug = `every-${Date.now()}`;
  const sp = await rest(page, 'POST', '/status-pages', { name: 'Every Screen Status', slug, published: true });
  ids.page = sp.id;
  const incident = await rest(page, 'POST', '/incidents', { statusPageId: sp.id, title: 'Checkout outage', message: 'Looking into it.' });
  await rest(page, 'POST', `/incidents/${incident.incident.id}/resolve`, { message: 'Fixed.' });
  await rest(page, 'POST', '/incidents', { statusPageId: sp.id, title: 'Slow search', message: 'Search is slow.' });
  const pm = await rest(page, 'POST', '/postmortems', { incidentId: incident.incident.id, title: 'Checkout outage', body: 'What happened.' });
  ids.postmortem = pm.id;
  // The failing monitor's alert, for the alert screen.
  await expect
    .poll(async () => {
      const r = await rest(page, 'GET', '/alerts');
      const list = (Array.isArray(r) ? r : r.alerts) as { id: string; monitorId: string }[];
      ids.alert = list.find((a) => a.monitorId === http.id)?.id ?? '';
      return ids.alert;
    }, { timeout: 60_000 })
    .not.toBe('');
  await rest(page, 'POST', `/monitors/${http.id}/pause`);
});

test('axe finds no serious or critical violation on any screen, light or dark', async () => {
  test.setTimeout(300_000);
  const found: string[] = [];
  for (const [path, heading] of routes()) {
    await open(path, heading);
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      found.push(...(await axeViolations(page, `${path} (${scheme})`)));
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }
  expect(found).toEqual([]);
});

test('at 360 px nothing on a main screen leaves the viewport', async () => {
  test.setTimeout(300_000);
  await page.setViewportSize({ width: 360, height: 740 });
  const found: string[] = [];
  for (const [path, heading, main] of routes()) {
    if (!main) continue;
    await open(path, heading);
    found.push(...(await page.evaluate(cutOff)).map((x) => `${path}: ${x}`));
  }
  await page.emulateMedia({ colorScheme: 'dark' });
  await open(`/app/monitors/${ids.http}`, /Shop front/);
  await shot(page, 'narrow-monitor-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
  expect(found).toEqual([]);
});

/** Axe in both schemes and the 360 px check on the page `p` shows now, as readable lines;
 *  with `screenshot`, a screenshot in each scheme under that name. */
async function peopleChecks(p: Page, name: string, screenshot?: string): Promise<string[]> {
  await expect(p.getByRole('heading', { level: 1 })).toBeVisible();
  const found: string[] = [];
  for (const scheme of ['light', 'dark'] as const) {
    await p.emulateMedia({ colorScheme: scheme });
    found.push(...(await axeViolations(p, `${name} (${scheme})`)));
    if (screenshot) await shot(p, scheme === 'light' ? screenshot : `${screenshot}-dark`);
  }
  await p.emulateMedia({ colorScheme: 'light' });
  const wide = p.viewportSize()!;
  await p.setViewportSize({ width: 360, height: 740 });
  found.push(...(await p.evaluate(cutOff)).map((x) => `${name} at 360 px: ${x}`));
  await p.setViewportSize(wide);
  return found;
}

test('every people-facing page passes axe in both schemes and fits 360 px', async ({ browser }) => {
  test.setTimeout(300_000);
  const found: string[] = [];
  // Signed in: the dashboard's own pages reached from a link.
  for (const [path, heading, name] of [
    ['/app/oauth/consent?consent_code=not-a-real-code&client_id=Claude%20Desktop&scope=monitors%3Aread+incidents%3Awrite', /Allow access/, 'people-oauth-consent'],
    ['/app/invitations/accept?token=not-a-real-token', /Join a workspace/, 'people-invitation'],
    ['/app/invitations/accept', /Join a workspace/, undefined],
  ] as const) {
    await page.goto(path);
    await expect(page.getByRole('heading', { level: 1 })).toContainText(heading);
    found.push(...(await peopleChecks(page, path, name)));
  }
  // Anyone: the server's pages, from a fresh browser with no session.
  const ctx = await browser.newContext();
  const v = await ctx.newPage();
  for (const [path, heading] of [
    [`/s/${slug}`, /Every Screen Status/],
    ['/s/no-such-page', /Status page not found/],
    ['/alerts/ack?token=nope', /Link not valid/],
    ['/api/v1/subscribers/verify?token=nope', /Link not valid/],
    ['/api/v1/subscribers/unsubscribe?token=nope', /Link not valid/],
    ['/auth/verify-email?token=nope', /Link not valid/],
  ] as const) {
    await v.goto(path);
    await expect(v.getByRole('heading', { level: 1 })).toContainText(heading);
    found.push(...(await peopleChecks(v, path)));
  }
  // Subscribing from the status page: "check your inbox", the confirm link and its answer,
  // then the unsubscribe link and its answer.
  const email = `sub+${Date.now()}@example.com`;
  await v.goto(`/s/${slug}`);
  await v.getByLabel('Email address').fill(email);
  await v.getByRole('button', { name: 'Subscribe' }).click();
  await expect(v.getByRole('heading', { name: 'Check your inbox' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'check your inbox', 'people-check-inbox')));
  let confirm = '';
  await expect.poll(async () => (confirm = await linkIn(email, '/api/v1/subscribers/verify?token=').catch(() => '')), { timeout: 30_000 }).not.toBe('');
  await v.goto(confirm);
  await expect(v.getByRole('heading', { name: 'Confirm your subscription?' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'confirm the subscription', 'people-confirm-subscription')));
  await v.getByRole('button', { name: 'Confirm the subscription' }).click();
  await expect(v.getByRole('heading', { name: 'Subscription confirmed' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'subscription confirmed')));
  let leave = '';
  await expect.poll(async () => (leave = await linkIn(email, '/api/v1/subscribers/unsubscribe?token=').catch(() => '')), { timeout: 30_000 }).not.toBe('');
  await v.goto(leave);
  await expect(v.getByRole('heading', { name: 'Unsubscribe?' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'unsubscribe', 'people-unsubscribe')));
  await v.getByRole('button', { name: 'Unsubscribe' }).click();
  await expect(v.getByRole('heading', { name: 'Unsubscribed' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'unsubscribed')));
  // The acknowledge link of the failing monitor's alert, as its webhook delivered it.
  let ack = '';
  await expect
    .poll(async () => {
      const hooks = (await (await fetch(`${TARGET()}/__hooks`)).json()) as any[];
      ack = hooks.find((h) => h.type === 'alert.opened' && h.data?.monitor?.id === ids.http)?.data?.links?.acknowledge ?? '';
      return ack;
    }, { timeout: 60_000 })
    .not.toBe('');
  await v.goto(ack);
  await expect(v.getByRole('heading', { name: 'Acknowledge this alert?' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'acknowledge')));
  await v.getByRole('button', { name: 'Acknowledge' }).click();
  await expect(v.getByRole('heading', { name: 'Alert acknowledged' })).toBeVisible();
  found.push(...(await peopleChecks(v, 'acknowledged')));
  await ctx.close();
  expect(found).toEqual([]);
});

test("the chart's times are in the workspace's time zone", async ({ browser }) => {
  // Kathmandu is 5 h 45 min from UTC, which no rounding hides; the browser runs in UTC.
  const ctx = await browser.newContext({ timezoneId: 'UTC', storageState: await page.context().storageState() });
  const p = await ctx.newPage();
  const etag = (await p.request.get('/workspace/settings')).headers()['etag'];
  const r = await p.request.patch('/workspace/settings', {
    data: { timezone: 'Asia/Kathmandu' },
    headers: { origin: process.env.TOCSIN_URL!, ...(etag ? { 'if-match': etag } : {}) },
  });
  expect(r.ok(), await r.text()).toBe(true);
  await p.goto(`/app/monitors/${ids.http}`);
  const chart = p.getByRole('img', { name: /Response time over/ });
  await expect(chart).toHaveAttribute('data-zone', 'Asia/Kathmandu');
  await p.getByRole('group', { name: 'Chart range' }).getByRole('button', { name: '1 h', exact: true }).click();
  // The legend shows the time of the check under the cursor: the latest, at the right edge.
  await expect(chart).toHaveAttribute('data-range', '1h');
  // The chart may draw itself again as the range's data arrives: take the box of the one
  // that is there, and hover it through the locator (which finds it again if it was redrawn).
  const over = p.locator('.chart .u-over');
  let box: { width: number; height: number } | null = null;
  await expect.poll(async () => (box = await over.boundingBox()) !== null).toBe(true);
  const { width, height } = box!;
  await over.hover({ position: { x: width - 2, y: height / 2 } });
  const shown = (await p.locator('.chart .u-legend .u-series').first().locator('.u-value').textContent())!.trim();
  // uPlot's legend stamp: "2026-11-27 11:05pm" (seconds when the range is short).
  const m = shown.match(/(\d{4})-(\d{2})-(\d{2}) (\d{1,2}):(\d{2})(?::(\d{2}))?\s*(am|pm)?/i);
  expect(m, shown).not.toBeNull();
  let hour = Number(m![4]);
  if (m![7]) hour = (hour % 12) + (m![7].toLowerCase() === 'pm' ? 12 : 0);
  const wall = Date.UTC(Number(m![1]), Number(m![2]) - 1, Number(m![3]), hour, Number(m![5]), Number(m![6] ?? 0));
  // That wall time is now in Kathmandu (the check ran within the last minutes), not now in UTC.
  const kathmandu = Date.now() + (5 * 60 + 45) * 60_000;
  expect(Math.abs(wall - kathmandu), `${shown} is not Kathmandu's time`).toBeLessThan(10 * 60_000);
  await ctx.close();
});

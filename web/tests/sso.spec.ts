// Single sign-on and the viewer role in a real browser. A real OpenID provider (panva's
// oidc-provider, crates/tocsin/tests/it/oidc/provider.mjs) on loopback, and a `tocsin serve` of
// our own whose `[[sso.oidc]]` provider "Acme" makes its new people viewers of the owner's
// workspace. The owner signs up and fills the workspace through the API; then a person clicks
// "Sign in with Acme" on the dashboard's sign-in page, types a username on the provider's own
// login page, and lands on the owner's monitors as a viewer. Every screen then reads and offers
// no control that writes; the members list says who signs in how (Acme, Password). Axe in both
// colour schemes on every screen the viewer sees, and screenshots.
import { expect, request, test, type APIRequestContext, type Page } from '@playwright/test';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { axeViolations, PASSWORD, shot, TARGET } from './helpers';
import { startTocsin, type Tocsin } from './server';

test.describe.configure({ mode: 'serial' });

const CLIENT_ID = 'tocsin';
const CLIENT_SECRET = 'tocsin-browser-test-secret';
const SLUG = 'acme-team';
const VIEWER = 'vera';

let idp: ChildProcess;
let issuer = '';
let tocsin: Tocsin;
let owner: APIRequestContext;
let ownerEmail = '';
let page: Page;
const ids: Record<string, string> = {};

/** Starts the provider as the Rust tests do: its packages from the committed lock file the
 *  first time, then `node provider.mjs` until it says `READY <issuer>`. */
async function startProvider(): Promise<[ChildProcess, string]> {
  const dir = fileURLToPath(new URL('../../crates/tocsin/tests/it/oidc/', import.meta.url));
  if (!existsSync(join(dir, 'node_modules/oidc-provider/package.json'))) {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  const child = spawn(process.execPath, ['provider.mjs'], {
    cwd: dir,
    env: { ...process.env, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET, OIDC_PORT: '0' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = await new Promise<string>((ok, fail) => {
    let said = '';
    // Kept reading after READY, so the provider never writes to a full pipe.
    child.stdout!.on('data', (d) => {
      said += d;
      const m = said.match(/^READY (\S+)$/m);
      if (m) ok(m[1]);
    });
    child.on('exit', (code) => fail(new Error(`the provider exited with ${code}: ${said}`)));
  });
  return [child, url];
}

/** A REST call as the owner, for setup. */
async function asOwner(method: string, path: string, body?: unknown): Promise<any> {
  const r = await owner.fetch(path, { method, data: body });
  expect(r.ok(), `${method} ${path}: ${r.status()} ${await r.text()}`).toBe(true);
  return r.status() === 204 ? null : r.json();
}

test.beforeAll(async () => {
  test.setTimeout(120_000);
  [idp, issuer] = await startProvider();
  tocsin = await startTocsin({
    toml: [
      '[[sso.oidc]]',
      'id = "acme"',
      'name = "Acme"',
      `issuer = "${issuer}"`,
      `client_id = "${CLIENT_ID}"`,
      `client_secret = "${CLIENT_SECRET}"`,
      `workspace = "${SLUG}"`,
      'default_role = "viewer"',
    ].join('\n'),
  });
  // The provider names its workspace by slug, read at each sign-in: the owner's workspace
  // takes that slug once it exists.
  owner = await request.newContext({ baseURL: tocsin.url, extraHTTPHeaders: { origin: tocsin.url } });
  ownerEmail = `olive+${Date.now()}@example.com`;
  await asOwner('POST', '/auth/sign-up/email', { name: 'Olive Owner', email: ownerEmail, password: PASSWORD });
  await asOwner('PATCH', '/workspace/settings', { name: 'Acme Team', slug: SLUG });

  const hook = await asOwner('POST', '/notification-channels', { name: 'Ops hook', type: 'WEBHOOK', config: { url: `${TARGET()}/__hook` } });
  await asOwner('POST', '/escalation-policies', { name: 'Ops', steps: [{ delayMinutes: 0, notificationChannelIds: [hook.id] }] });
  const down = await asOwner('POST', '/monitors', {
    name: 'Shop front', type: 'HTTP', url: `${TARGET()}/__down`, interval: 2, timeout: 1, notificationChannelIds: [hook.id],
  });
  ids.down = down.id;
  const push = await asOwner('POST', '/monitors', { name: 'Nightly backup', type: 'PUSH', interval: 3600 });
  ids.push = push.id;
  const project = await asOwner('POST', '/projects', { name: 'Storefront' });
  await asOwner('PUT', `/projects/${project.id}/monitors`, { monitorIds: [down.id] });
  await asOwner('POST', '/maintenance-windows', {
    title: 'Router swap', monitorId: push.id, startsAt: '2031-01-01T01:00:00Z', endsAt: '2031-01-01T02:00:00Z', timezone: 'UTC',
  });
  const sp = await asOwner('POST', '/status-pages', { name: 'Acme Status', slug: `acme-status-${Date.now()}`, published: true });
  ids.page = sp.id;
  await asOwner('PUT', `/status-pages/${sp.id}/components`, [{ name: 'Storefront', monitorId: down.id }]);
  const past = await asOwner('POST', '/incidents', { statusPageId: sp.id, title: 'Checkout outage', message: 'Looking into it.' });
  await asOwner('POST', `/incidents/${past.incident.id}/resolve`, { message: 'Fixed.' });
  await asOwner('POST', '/incidents', { statusPageId: sp.id, title: 'Slow search', message: 'Search is slow.' });
  const pm = await asOwner('POST', '/postmortems', { incidentId: past.incident.id, title: 'Checkout outage', body: '## Summary\n\nThe card processor timed out.' });
  ids.postmortem = pm.id;
  await asOwner('POST', `/status-pages/${sp.id}/publishable-keys`, { name: 'marketing site' });
  // The failing monitor's open alert, which a viewer may read but not acknowledge.
  await expect
    .poll(async () => {
      const r = await asOwner('GET', '/alerts?status=open');
      ids.alert = (r.alerts as { id: string; monitorId: string }[]).find((a) => a.monitorId === down.id)?.id ?? '';
      return ids.alert;
    }, { timeout: 60_000 })
    .not.toBe('');
});

test.afterAll(async () => {
  await page?.context().close();
  await owner?.dispose();
  await tocsin?.stop();
  idp?.kill();
});

test('"Sign in with Acme" goes through the provider\'s own login page and lands on the monitors as a viewer', async ({ browser }) => {
  page = await (await browser.newContext({ baseURL: tocsin.url })).newPage();
  await page.goto('/app/sign-in?next=/app/');
  await page.getByRole('link', { name: 'Sign in with Acme' }).click();

  // At the provider, not at Tocsin.
  await expect(page).toHaveURL(new RegExp(`^${issuer}/interaction/`));
  await expect(page).toHaveTitle(/Test identity provider/);
  await shot(page, 'sso-provider-login');
  await page.getByLabel('Username').fill(VIEWER);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await expect(page).toHaveURL(`${tocsin.url}/app/`);
  await expect(page.getByRole('heading', { name: 'Monitors', level: 1 })).toBeVisible();
  await expect(page.getByTestId('read-only-note')).toHaveText('You have read-only access to this workspace (viewer).');
  await expect(page.locator('#ws-switch option:checked')).toHaveText('Acme Team');
  await expect(page.getByRole('link', { name: 'Shop front' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Nightly backup' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'New monitor' })).toHaveCount(0);
  await expect(page.getByRole('checkbox')).toHaveCount(0);
  // The keyboard's "new monitor" does nothing for a viewer either.
  await page.locator('body').press('n');
  await expect(page).toHaveURL(`${tocsin.url}/app/`);

  const mine = await (await page.request.get('/workspaces')).json();
  expect(mine.find((w: { slug: string }) => w.slug === SLUG)?.role).toBe('viewer');
});

/** Names of the buttons and links that change something; none may be offered to a viewer. */
const WRITES =
  /^(New |Create|Edit|Delete|Pause|Resume|Check now|Acknowledge|Resolve|Publish|Unpublish|Save|Send test|Disable|Enable|Invite|Revoke|Rotate|Mint|Add|Open incident|Post update|Plan|Regenerate|Remove|Re-admit|Upgrade|Manage billing|Select|Set channels|Reorder|Move|Write|Discard)\b/;

/** [path, the level-1 heading, a text that shows once the screen's data has arrived]. */
function screens(): [string, RegExp, string][] {
  return [
    ['/app/', /Monitors/, 'Nightly backup'],
    [`/app/monitors/${ids.down}`, /Shop front/, 'Recent checks'],
    [`/app/monitors/${ids.push}`, /Nightly backup/, 'Push URL'],
    [`/app/monitors/${ids.down}/edit`, /Edit monitor/, 'Viewers cannot create or change monitors.'],
    ['/app/monitors/new', /New monitor/, 'Viewers cannot create or change monitors.'],
    ['/app/alerts', /Alerts/, 'Shop front'],
    [`/app/alerts/${ids.alert}`, /Alert: Shop front/, 'Notifications'],
    ['/app/channels', /Notification channels/, 'Ops hook'],
    ['/app/escalation', /Escalation policies/, 'Ops hook'],
    ['/app/maintenance', /Maintenance/, 'Router swap'],
    ['/app/projects', /Projects/, 'Shop front'],
    ['/app/status-pages', /Status pages/, 'Acme Status'],
    [`/app/status-pages/${ids.page}`, /Acme Status/, 'Slow search'],
    [`/app/status-pages/${ids.page}/branding`, /Branding/, 'Look of the public page'],
    [`/app/status-pages/${ids.page}/postmortems`, /Postmortems/, 'Checkout outage'],
    [`/app/status-pages/${ids.page}/postmortems/${ids.postmortem}`, /Postmortem/, 'The card processor timed out.'],
    [`/app/status-pages/${ids.page}/subscribers`, /Subscribers/, 'No subscribers yet'],
    [`/app/status-pages/${ids.page}/embed`, /Embed/, 'marketing site'],
    ['/app/workspace', /Workspace/, 'Olive Owner'],
    ['/app/api-keys', /API keys/, 'Capabilities'],
    ['/app/mcp-grants', /MCP grants/, 'No agent has access'],
    ['/app/billing', /Billing/, 'managed by its owners'],
    ['/app/settings', /Workspace settings/, 'Acme Team'],
  ];
}

async function open(path: string, heading: RegExp, loaded: string) {
  await page.goto(path);
  await expect(page.getByRole('heading', { level: 1 })).toContainText(heading);
  await expect(page.getByRole('main').getByText(loaded).first()).toBeVisible();
  await expect(page.locator('[aria-busy="true"]')).toHaveCount(0);
  await expect(page.getByTestId('read-only-note')).toBeVisible();
}

/** What on the screen would change something: controls named as writes, and forms. The API
 *  keys screen is left to its own test: keys are the person's own, and a viewer mints, rotates
 *  and revokes read-only ones. */
async function writes(path: string): Promise<string[]> {
  if (path.endsWith('/api-keys')) return [];
  const names = await page.locator('main').locator('button, a, input[type="submit"], input[type="checkbox"]').evaluateAll((els) =>
    els
      .filter((e) => !(e as HTMLElement).closest('[hidden]') && (e as HTMLElement).getClientRects().length > 0)
      .map((e) => (e.getAttribute('aria-label') ?? (e as HTMLInputElement).value ?? '') || (e.textContent ?? '').trim()),
  );
  const found = names.filter((n) => WRITES.test(n)).map((n) => `${path}: "${n}"`);
  const forms = await page.locator('main form').count();
  if (forms) found.push(`${path}: ${forms} form(s)`);
  return found;
}

test('no screen offers a viewer a control that writes, and every one passes axe in both schemes', async () => {
  test.setTimeout(300_000);
  const found: string[] = [];
  const violations: string[] = [];
  for (const [path, heading, loaded] of screens()) {
    await open(path, heading, loaded);
    found.push(...(await writes(path)));
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      violations.push(...(await axeViolations(page, `${path} as a viewer (${scheme})`)));
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }
  expect(found).toEqual([]);
  expect(violations).toEqual([]);
});

test('the members list says how each person signs in', async () => {
  await open('/app/workspace', /Workspace/, 'Olive Owner');
  const row = (text: string) => page.locator('tr[data-member-id]', { hasText: text });
  await expect(row(ownerEmail).getByTestId('sign-in-methods')).toHaveText('Password');
  await expect(row(ownerEmail)).toContainText('owner');
  await expect(row(`${VIEWER}@example.test`).getByTestId('sign-in-methods')).toHaveText('Acme');
  await expect(row(`${VIEWER}@example.test`)).toContainText('viewer');
  // Invitations are the owners' and admins' to manage; the audit log is a read like any other.
  await expect(page.getByRole('heading', { name: 'Invitations' })).toHaveCount(0);
  await expect(page.getByRole('heading', { name: 'Audit log' })).toBeVisible();
  await shot(page, 'viewer-workspace');
});

test('a viewer mints only read-only API keys', async () => {
  await open('/app/api-keys', /API keys/, 'Capabilities');
  const caps = await page.locator('input[name="cap"]').evaluateAll((els) => els.map((e) => (e as HTMLInputElement).value));
  expect(caps.length).toBeGreaterThan(0);
  expect(caps.filter((c) => !c.endsWith(':read'))).toEqual([]);
  await expect(page.getByRole('group', { name: 'Presets' }).getByRole('button')).toHaveText(['Read only']);
  await page.getByLabel('Name', { exact: true }).fill('viewer script');
  await page.getByRole('button', { name: 'Read only' }).click();
  await page.getByRole('button', { name: 'Mint key' }).click();
  await expect(page.getByTestId('new-secret')).toBeVisible();
});

test('screenshots of the viewer\'s screens, light and dark', async () => {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const suffix = scheme === 'dark' ? '-dark' : '';
    await open('/app/', /Monitors/, 'Nightly backup');
    await shot(page, `viewer-monitors${suffix}`);
    await open(`/app/monitors/${ids.down}`, /Shop front/, 'Recent checks');
    await shot(page, `viewer-monitor-detail${suffix}`);
    await open(`/app/status-pages/${ids.page}`, /Acme Status/, 'Slow search');
    await shot(page, `viewer-status-page${suffix}`);
  }
  await page.emulateMedia({ colorScheme: 'light' });
});

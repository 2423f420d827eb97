// Email readiness on a server without an SMTP relay (started here; the shared test server has
// one): the banner its owner sees once something needs email, the channel form offering no
// EMAIL type, and the public status page offering no subscribe form while the API refuses a
// subscription with its precise code.
import { expect, test, type Browser, type Page } from '@playwright/test';
import { axe, shots } from './helpers';
import { startTocsin, type Tocsin } from './server';


test.describe.configure({ mode: 'serial' });

let server: Tocsin;
let page: Page;
const SLUG = `no-mail-${Date.now()}`;

async function signedIn(browser: Browser, url: string): Promise<Page> {
  const p = await (await browser.newContext({ baseURL: url })).newPage();
  await p.goto('/app/sign-up');
  await p.getByLabel('Name').fill('Olga');
  await p.getByLabel('Email').fill(`olga+${Date.now()}@example.com`);
  await p.getByLabel('Password').fill('correct horse battery');
  await p.getByRole('button', { name: 'Create account' }).click();
  await expect(p.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  return p;
}

test.beforeAll(async ({ browser }) => {
  server = await startTocsin();
  page = await signedIn(browser, server.url);
});

test.afterAll(async () => {
  await page?.context().close();
  await server?.stop();
});

test('the owner is warned once something needs the email this server cannot send', async () => {
  const banner = page.getByRole('region', { name: 'Email is not set up' });
  // Nothing needs email yet: no banner.
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  await expect(banner).toHaveCount(0);
  const r = await page.request.post(`${server.url}/status-pages`, {
    headers: { origin: server.url },
    data: { name: 'No-mail status', slug: SLUG, published: true },
  });
  expect(r.ok(), await r.text()).toBe(true);
  await page.getByRole('link', { name: 'Channels' }).click();
  await expect(banner).toContainText('This server sends no email');
  await expect(banner).toContainText('Readers of your 1 published status page cannot subscribe by email.');
  await expect(banner).toContainText('--smtp-url');
  // The channel form does not offer a type that could never send.
  const emailType = page.getByRole('form', { name: 'New channel' }).getByRole('option', { name: /^EMAIL/ });
  await expect(emailType).toBeDisabled();
  await expect(emailType).toHaveText('EMAIL (this server sends no email)');
  await axe(page, 'email banner');
  await page.screenshot({ path: `${shots}email-banner.png` });
});

test('the public page offers no subscribe form and the API refuses with SMTP_NOT_CONFIGURED', async () => {
  await page.goto(`${server.url}/s/${SLUG}`);
  await expect(page.getByRole('heading', { name: 'Updates', exact: true })).toBeVisible();
  await expect(page.getByText('Updates by email are not available on this server.')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Subscribe' })).toHaveCount(0);
  await expect(page.getByLabel('Email address')).toHaveCount(0);
  await expect(page.getByRole('link', { name: 'RSS' }).first()).toBeVisible();
  await axe(page, 'public page without email');
  const res = await fetch(`${server.url}/api/v1/status-pages/${SLUG}/subscribers`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'reader@example.com' }),
  });
  expect(res.status).toBe(409);
  expect(((await res.json()) as { code: string }).code).toBe('SMTP_NOT_CONFIGURED');
});

// `?next=` after signing in, in a real browser against the real binary: hostile values that
// Chromium would read as another origin (a tab, newline or carriage return between the
// slashes, a backslash for a slash, `//host`, an absolute URL) leave the person on the app's
// origin, and a decoy server on another port of this machine is never asked for anything;
// a path of this server is still followed.
import { expect, test, type Browser, type Page } from '@playwright/test';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const EMAIL = `next+${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';
const APP = () => new URL(process.env.TOCSIN_URL!).origin;

let decoy: Server;
let decoyHost = '';
const decoyHits: string[] = [];

test.describe.configure({ mode: 'serial' });

test.beforeAll(async () => {
  decoy = createServer((req, res) => {
    decoyHits.push(req.url ?? '');
    res.end('decoy');
  });
  await new Promise<void>((ok) => decoy.listen(0, '127.0.0.1', () => ok()));
  decoyHost = `127.0.0.1:${(decoy.address() as AddressInfo).port}`;
  const res = await fetch(`${APP()}/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD, name: 'Next' }),
  });
  expect(res.status).toBe(200);
});

test.afterAll(async () => {
  await new Promise((ok) => decoy.close(ok));
});

/** Each hostile `next`, percent-encoded as it arrives in the address bar. */
function hostile(): string[] {
  const h = decoyHost;
  return [
    `%2F%09%2F${h}%2Fx`,
    `%2F%0A%2F${h}%2Fx`,
    `%2F%0D%2F${h}%2Fx`,
    `%2F%5C${h}%2Fx`,
    `%2F%5C%2F${h}%2Fx`,
    `%2F%2F${h}%2Fx`,
    `%2F%09%5C${h}%2Fx`,
    encodeURIComponent(`http://${h}/x`),
    encodeURIComponent(`javascript:location='http://${h}/x'`),
  ];
}

/** Opens `url` in a fresh context, signs in there, and returns where the page settled. */
async function signInAt(browser: Browser, url: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  await expect(page.getByRole('heading', { name: 'Sign in to Tocsin' })).toBeVisible();
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const landed = await settled(page);
  await context.close();
  return landed;
}

/** Where `page` is once whatever it does next is done. */
async function settled(page: Page) {
  await page.waitForTimeout(1500);
  await page.waitForLoadState('load');
  return page.url();
}

test('a hostile next never leaves the app origin when signing in', async ({ browser }) => {
  for (const next of hostile()) {
    const landed = await signInAt(browser, `/app/sign-in?next=${next}`);
    expect(new URL(landed).origin, `next=${next} landed on ${landed}`).toBe(APP());
  }
  expect(decoyHits).toEqual([]);
});

test('a hostile next never leaves the app origin when already signed in', async ({ browser }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  // The context's request client shares its cookies: the page is signed in.
  const res = await page.request.post('/auth/sign-in/email', { data: { email: EMAIL, password: PASSWORD } });
  expect(res.status()).toBe(200);
  for (const next of hostile()) {
    await page.goto(`/app/sign-in?next=${next}`);
    const landed = await settled(page);
    expect(new URL(landed).origin, `next=${next} landed on ${landed}`).toBe(APP());
  }
  await context.close();
  expect(decoyHits).toEqual([]);
});

test('a next on this server is followed', async ({ browser }) => {
  const landed = await signInAt(browser, `/app/sign-in?next=${encodeURIComponent('/app/alerts')}`);
  expect(new URL(landed).pathname).toBe('/app/alerts');
  const outside = await signInAt(browser, `/app/sign-in?next=${encodeURIComponent('/healthz?from=next')}`);
  expect(new URL(outside).pathname + new URL(outside).search).toBe('/healthz?from=next');
});

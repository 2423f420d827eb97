// What the browser tests share: the server's and the loopback target's addresses, sign-up,
// REST calls with the browser's session for setup a test is not about, axe (no serious or
// critical violation) in one or both colour schemes, screenshots into docs/screenshots, and
// the 360 px check that no element leaves the viewport sideways.
import AxeBuilder from '@axe-core/playwright';
import { expect, type Locator, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BASE = () => process.env.TOCSIN_URL!;
export const TARGET = () => process.env.TARGET_URL!;
export const PASSWORD = 'correct horse battery';

export const shots = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
mkdirSync(shots, { recursive: true });

/** Signs up a fresh account in `page` and waits for the empty monitor list. */
export async function signUp(page: Page, name: string): Promise<string> {
  const email = `${name.toLowerCase().replace(/\W+/g, '')}+${Date.now()}${Math.floor(Math.random() * 1e6)}@example.com`;
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  return email;
}

/** A REST call with the browser's session, for setup the screens under test do not own. */
export async function rest(page: Page, method: string, path: string, body?: unknown): Promise<any> {
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const r = await fetch(`${BASE()}${path}`, {
    method,
    headers: { cookie, origin: BASE(), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(r.ok, `${method} ${path}: ${r.status} ${await r.clone().text()}`).toBe(true);
  return r.status === 204 ? null : r.json();
}

/** Serious and critical axe violations on the page as it is, as readable lines; with
 *  `contrastJudged`, also fails unless colour contrast was judged rather than skipped. Legacy
 *  mode runs axe inside the page (these pages have no frames): the default mode opens a helper
 *  page per check, which stalled once behind another spec's open pages. */
export async function axeViolations(page: Page, screen: string, opts: { contrastJudged?: boolean } = {}): Promise<string[]> {
  const results = await new AxeBuilder({ page }).setLegacyMode().analyze();
  if (opts.contrastJudged) {
    const judged = [...results.passes, ...results.violations, ...results.incomplete].map((r) => r.id);
    expect(judged, screen).toContain('color-contrast');
  }
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

export async function axe(page: Page, screen: string, opts: { contrastJudged?: boolean } = {}) {
  expect(await axeViolations(page, screen, opts)).toEqual([]);
}

/** Axe in the light scheme, then the dark one (back to light after). */
export async function axeBoth(page: Page, screen: string) {
  await page.emulateMedia({ colorScheme: 'light' });
  await axe(page, screen);
  await page.emulateMedia({ colorScheme: 'dark' });
  await axe(page, `${screen} (dark)`);
  await page.emulateMedia({ colorScheme: 'light' });
}

export async function shot(page: Page, name: string) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${shots}${name}.png`, fullPage: false });
}

/** Visible elements whose box leaves the viewport sideways, outside sideways scrollers; run
 * in the page (`page.evaluate(cutOff)`). */
export function cutOff(): string[] {
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
  if (document.documentElement.scrollWidth > width + 1) out.push(`the page scrolls sideways (${document.documentElement.scrollWidth} px wide)`);
  return out;
}

/** Counts what a person does: each click, form fill, choice in a list and tick is one step. */
export class Steps {
  n = 0;
  async click(l: Locator) {
    this.n++;
    await l.click();
  }
  async fill(l: Locator, value: string) {
    this.n++;
    await l.fill(value);
  }
  async select(l: Locator, value: string | { label: string }) {
    this.n++;
    await l.selectOption(value);
  }
  async check(l: Locator) {
    this.n++;
    await l.check();
  }
}

/** The steps each everyday task took, printed together at the end of the ten-task spec. */
export function report(counts: Map<string, number>) {
  console.log(['everyday tasks, steps (clicks + fills) in the dashboard:', ...[...counts].map(([k, v]) => `  ${k}: ${v}`)].join('\n'));
}

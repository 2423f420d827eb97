// The workspace administration screens in a real browser against the real binary, as a fresh
// user: projects (create, rename, pick monitors, reorder by dragging and by keyboard, the
// order still there after a reload), escalation policies (the server's error on a step's
// delay shown on that field, then created), workspace settings (a field error, then a change
// that survives a reload, and the plan's usage), the MCP grants' empty state, accessibility
// (axe, light and dark) of each, and no sideways scrolling at 360 px.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, shot } from './helpers';


const EMAIL = `lin+${Date.now()}@example.com`;

/** A REST call with the browser's session, for setup the screens under test do not own. */
async function rest(page: Page, path: string, body: unknown): Promise<Record<string, unknown>> {
  const base = process.env.TOCSIN_URL!;
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { cookie, origin: base, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status, `${path}: ${await r.clone().text()}`).toBe(201);
  return (await r.json()) as Record<string, unknown>;
}

const nav = (page: Page, name: string) =>
  page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();

test.describe.configure({ mode: 'serial' });

let page: Page;
const refused: string[] = [];

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  page.on('console', (m) => {
    if (m.text().includes('Content Security Policy')) refused.push(m.text());
  });
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Lin');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
});

test.afterAll(() => {
  expect(refused).toEqual([]);
});

test('projects are created, edited, given monitors, and reordered by drag and by keyboard', async () => {
  await rest(page, '/monitors', { name: 'Billing API', type: 'TCP', host: '127.0.0.1', port: 9, active: false });
  await nav(page, 'Projects');
  await expect(page.getByRole('heading', { name: 'No projects yet' })).toBeVisible();
  await axe(page, 'projects (empty)');

  for (const name of ['Alpha', 'Beta']) {
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect(page.locator('ol.projects h2').last()).toHaveText(name);
  }
  const names = page.locator('ol.projects h2');
  await expect(names).toHaveText(['Alpha', 'Beta']);

  // Rename and describe one, and give it a monitor.
  await page.getByRole('button', { name: 'Edit Alpha' }).click();
  await page.getByLabel('Project name').fill('Alpha team');
  await page.getByLabel('Project description').fill('Customer-facing services');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(names).toHaveText(['Alpha team', 'Beta']);
  await page.getByRole('button', { name: 'Monitors of Alpha team' }).click();
  await page.getByRole('checkbox', { name: 'Billing API' }).check();
  await page.getByRole('button', { name: 'Save monitors' }).click();
  await expect(page.locator('[data-project-id]').first()).toContainText('1 monitor: Billing API');

  // Drag Beta by its handle above Alpha team.
  const status = page.locator('main [role="status"]');
  const handle = page.getByRole('button', { name: /^Reorder Beta/ });
  const from = (await handle.boundingBox())!;
  const over = (await page.locator('[data-project-id]').first().boundingBox())!;
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(from.x + from.width / 2, over.y + 4, { steps: 8 });
  await expect(names).toHaveText(['Beta', 'Alpha team']);
  await page.mouse.up();
  await expect(status).toContainText('Beta moved to position 1 of 2; order saved.');
  await page.reload();
  await expect(names).toHaveText(['Beta', 'Alpha team']);

  // The keyboard: arrow keys on the focused handle; focus stays on it.
  const alpha = page.getByRole('button', { name: /^Reorder Alpha team/ });
  await alpha.focus();
  await page.keyboard.press('ArrowUp');
  await expect(names).toHaveText(['Alpha team', 'Beta']);
  await expect(page.getByRole('button', { name: /^Reorder Alpha team/ })).toBeFocused();
  await expect(status).toContainText('Alpha team moved to position 1 of 2; order saved.');
  // And the move buttons.
  await page.getByRole('button', { name: 'Move Beta up' }).click();
  await expect(names).toHaveText(['Beta', 'Alpha team']);
  await expect(status).toContainText('Beta moved to position 1 of 2; order saved.');
  await page.getByRole('button', { name: 'Move Beta down' }).press('Enter');
  await expect(status).toContainText('Beta moved to position 2 of 2; order saved.');
  await page.reload();
  await expect(names).toHaveText(['Alpha team', 'Beta']);
  await axe(page, 'projects');
  await shot(page, 'projects');

  // Delete asks first.
  await page.getByRole('button', { name: 'Delete Beta' }).click();
  await page.getByRole('button', { name: 'Yes, delete Beta' }).click();
  await expect(names).toHaveText(['Alpha team']);
});

test('an escalation policy shows the server error on the step delay, then is created', async () => {
  await nav(page, 'Escalation');
  await expect(page.getByRole('heading', { name: 'No escalation policies yet' })).toBeVisible();
  await expect(page.getByRole('link', { name: 'Add a notification channel' })).toBeVisible();
  await axe(page, 'escalation (no channels)');
  await rest(page, '/notification-channels', {
    name: 'Ops webhook', type: 'WEBHOOK', config: { url: `${process.env.TARGET_URL}/hook` }, isDefault: false,
  });
  await page.reload();

  const form = page.getByRole('form', { name: 'New escalation policy' });
  await form.getByLabel('Policy name').fill('Out of hours');
  await form.getByLabel('Step 1: minutes after the alert opens').fill('0');
  await form.getByRole('group', { name: 'Step 1: notify' }).getByRole('checkbox', { name: /Ops webhook/ }).check();
  await form.getByRole('button', { name: 'Add a step' }).click();
  const delay2 = form.getByLabel('Step 2: minutes after the alert opens');
  await delay2.fill('99999');
  await form.getByRole('group', { name: 'Step 2: notify' }).getByRole('checkbox', { name: /Ops webhook/ }).check();
  await form.getByRole('button', { name: 'Create policy' }).click();
  // The server names `steps.1.delayMinutes`; the message sits beside that input.
  await expect(page.locator('#ep-new-s1-delay-error')).toContainText('10080');
  await expect(delay2).toHaveAttribute('aria-invalid', 'true');
  await expect(form.getByLabel('Step 1: minutes after the alert opens')).not.toHaveAttribute('aria-invalid', 'true');
  await axe(page, 'escalation (field error)');

  await delay2.fill('30');
  await form.getByRole('button', { name: 'Create policy' }).click();
  const card = page.locator('[data-policy-id]').first();
  await expect(card).toContainText('Out of hours');
  await expect(card).toContainText('At once: Ops webhook');
  await expect(card).toContainText('After 30 minutes: Ops webhook');

  // Edit: a longer second delay.
  await card.getByRole('button', { name: 'Edit Out of hours' }).click();
  await card.getByLabel('Step 2: minutes after the alert opens').fill('60');
  await card.getByRole('button', { name: 'Save policy' }).click();
  await expect(card).toContainText('After 1 hour: Ops webhook');
  await page.reload();
  await expect(page.locator('[data-policy-id]').first()).toContainText('After 1 hour: Ops webhook');
  await axe(page, 'escalation');
  await shot(page, 'escalation');
});

test('workspace settings: a field error, then a change that survives a reload; the plan', async () => {
  await nav(page, 'Settings');
  await expect(page.getByRole('heading', { name: 'Workspace settings' })).toBeVisible();
  await expect(page.getByLabel('Workspace name')).not.toHaveValue('');
  await page.getByLabel('Address (slug)').fill('Not A Slug!');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.locator('#ws-slug-error')).toBeVisible();
  await expect(page.getByLabel('Address (slug)')).toHaveAttribute('aria-invalid', 'true');

  const slug = `lin-labs-${Date.now() % 100000}`;
  await page.getByLabel('Address (slug)').fill(slug);
  await page.getByLabel('Workspace name').fill('Lin Labs');
  await page.getByLabel('Time zone').fill('Europe/Berlin');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByText('Settings saved.')).toBeVisible();
  await expect(page.locator('#ws-switch')).toContainText('Lin Labs');
  await page.reload();
  await expect(page.getByLabel('Workspace name')).toHaveValue('Lin Labs');
  await expect(page.getByLabel('Address (slug)')).toHaveValue(slug);
  await expect(page.getByLabel('Time zone')).toHaveValue('Europe/Berlin');

  const plan = page.locator('table.plan');
  await expect(plan.locator('tr[data-usage="monitors"] td').first()).toHaveText('1');
  await expect(plan.locator('tr[data-usage="notificationChannels"] td').first()).toHaveText('1');
  await axe(page, 'settings');
  await shot(page, 'settings');
});

test('MCP grants: the empty state says how an agent gets access', async () => {
  await nav(page, 'MCP grants');
  await expect(page.getByRole('heading', { name: 'No agent has access' })).toBeVisible();
  await expect(page.getByTestId('mcp-url')).toHaveText(`${process.env.TOCSIN_URL}/mcp`);
  await axe(page, 'mcp grants');
  await shot(page, 'mcp-grants');
});

test('dark theme and 360 px: no serious axe findings, no sideways scrolling', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 360, height: 740 });
  for (const [href, heading] of [
    ['/app/projects', 'Projects'],
    ['/app/escalation', 'Escalation policies'],
    ['/app/settings', 'Workspace settings'],
    ['/app/mcp-grants', 'MCP grants'],
  ]) {
    await page.goto(href);
    await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
    await expect(page.locator('main [aria-busy="true"]')).toHaveCount(0);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow, `${href} scrolls sideways`).toBeLessThanOrEqual(0);
    await axe(page, `${href} (dark, 360 px)`);
  }
  await page.goto('/app/projects');
  await expect(page.locator('ol.projects h2')).toHaveText(['Alpha team']);
  await shot(page, 'projects-360-dark');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });
});

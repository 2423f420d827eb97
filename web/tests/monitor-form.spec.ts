// The monitor form's alert routing in a real browser against the real binary, as a fresh user:
// a monitor created with an escalation policy, two of three projects and a notification
// channel; the API holds them and the edit form shows them ticked after a reload; the detail
// page names the policy and projects; the server's error on a policy deleted meanwhile is
// shown on the policy field; an edit sends only what changed (and the flap detection
// settings it shows). Axe runs on the form.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, rest, shots } from './helpers';


const EMAIL = `mo+${Date.now()}@example.com`;

test.describe.configure({ mode: 'serial' });

let page: Page;
const ids: Record<string, string> = {};

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Mo');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();

  for (const name of ['Alpha', 'Beta', 'Gamma']) ids[name] = (await rest(page, 'POST', '/projects', { name })).id as string;
  ids.hook = (await rest(page, 'POST', '/notification-channels', {
    name: 'Ops webhook', type: 'WEBHOOK', config: { url: `${process.env.TARGET_URL}/hook` }, isDefault: false,
  })).id as string;
  for (const name of ['Paging', 'Doomed']) {
    ids[name] = (await rest(page, 'POST', '/escalation-policies', {
      name, steps: [{ delayMinutes: 0, notificationChannelIds: [ids.hook] }],
    })).id as string;
  }
});

test('a monitor is created with a policy, projects and a channel, and edited', async () => {
  await page.goto('/app/monitors/new');
  await page.getByLabel('Name').fill('Checkout');
  await page.getByLabel('URL').fill(`${process.env.TARGET_URL}/`);
  const policy = page.getByLabel('Escalation policy');
  await expect(policy.locator('option')).toHaveCount(3);
  await expect(policy.locator('option').first()).toHaveText('None');
  await policy.selectOption({ label: 'Paging' });
  const projects = page.getByRole('group', { name: 'Projects' });
  const channels = page.getByRole('group', { name: 'Notification channels' });
  await projects.getByRole('checkbox', { name: 'Alpha' }).check();
  await projects.getByRole('checkbox', { name: 'Beta' }).check();
  await channels.getByRole('checkbox', { name: /Ops webhook/ }).check();
  await axe(page, 'monitor form (new)');
  await page.locator('#m-policy').evaluate((el) => el.closest('.field')!.scrollIntoView());
  await page.screenshot({ path: `${shots}monitor-form-routing.png` });
  await page.getByRole('button', { name: 'Create monitor' }).click();

  await expect(page.getByRole('heading', { level: 1, name: /Checkout/ })).toBeVisible();
  const id = page.url().split('/').pop()!;
  await expect(page.getByTestId('monitor-routing')).toHaveText('Escalation policy: Paging · Projects: Alpha, Beta');
  await page.screenshot({ path: `${shots}monitor-detail-routing.png` });
  const m = await rest(page, 'GET', `/monitors/${id}`);
  expect(m.escalationPolicyId).toBe(ids.Paging);
  expect([...(m.projectIds as string[])].sort()).toEqual([ids.Alpha, ids.Beta].sort());
  expect(m.notificationChannelIds).toEqual([ids.hook]);
  expect(m.flapDetection).toEqual({ transitions: 5, windowMinutes: 30 });

  // The edit form, after a reload, shows what the monitor has.
  await page.goto(`/app/monitors/${id}/edit`);
  await page.reload();
  await expect(policy).toHaveValue(ids.Paging);
  await expect(projects.getByRole('checkbox', { name: 'Alpha' })).toBeChecked();
  await expect(projects.getByRole('checkbox', { name: 'Beta' })).toBeChecked();
  await expect(projects.getByRole('checkbox', { name: 'Gamma' })).not.toBeChecked();
  await expect(channels.getByRole('checkbox', { name: /Ops webhook/ })).toBeChecked();
  await axe(page, 'monitor form (edit)');

  // A policy deleted while the form is open: the server's error sits on the policy field.
  await policy.selectOption({ label: 'Doomed' });
  await rest(page, 'DELETE', `/escalation-policies/${ids.Doomed}`);
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await expect(page.locator('#m-policy-error')).toContainText('no such escalation policy');
  await expect(policy).toHaveAttribute('aria-invalid', 'true');
  await expect(projects.getByRole('checkbox', { name: 'Alpha' })).not.toHaveAttribute('aria-invalid', 'true');
  await axe(page, 'monitor form (policy error)');

  // No policy, one project fewer; the channels, unchanged, are not sent and stay.
  await policy.selectOption({ label: 'None' });
  await projects.getByRole('checkbox', { name: 'Beta' }).uncheck();
  await page.getByLabel('Changes').fill('3');
  const sent = page.waitForRequest((r) => r.method() === 'PATCH' && r.url().endsWith(`/monitors/${id}`));
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  const patch = (await sent).postDataJSON() as Record<string, unknown>;
  expect(patch.escalationPolicyId).toBeNull();
  expect(patch.projectIds).toEqual([ids.Alpha]);
  expect('notificationChannelIds' in patch).toBe(false);
  expect(patch.flapDetection).toEqual({ transitions: 3, windowMinutes: 30 });
  await expect(page.getByTestId('monitor-routing')).toHaveText('Project: Alpha');
  const after = await rest(page, 'GET', `/monitors/${id}`);
  expect(after.escalationPolicyId).toBeNull();
  expect(after.projectIds).toEqual([ids.Alpha]);
  expect(after.notificationChannelIds).toEqual([ids.hook]);
  expect(after.flapDetection).toEqual({ transitions: 3, windowMinutes: 30 });
});

test('the escalation screen points to the monitor form', async () => {
  await page.goto('/app/escalation');
  await expect(page.getByRole('main')).toContainText('pick the policy under “Escalation policy”');
  await page.getByRole('main').getByRole('link', { name: 'create a monitor' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'New monitor' })).toBeVisible();
});

// Notification channels in a real browser against the real binary: a Telegram channel set up
// and changed through the form generated from its config schema (labels, required marks, the
// masked bot token that a blank keeps), pointed at a loopback HTTP server standing in for the
// Bot API through its `apiUrl` setting; each test's outcome shown once its delivery settles
// (a refused token, then a delivered message); the events it takes chosen in the form; disabled, enabled and deleted after a confirm.
import { expect, test, type Page } from '@playwright/test';
import { axe, PASSWORD, rest, shots } from './helpers';
import { createServer, type Server } from 'node:http';
import { listen } from './server';

const EMAIL = `tg+${Date.now()}@example.com`;

/** What the stand-in Bot API received: the path (with the token) and the JSON body. */
const received: { path: string; body: Record<string, unknown> }[] = [];
let bot: Server;
let botUrl = '';

test.describe.configure({ mode: 'serial' });

let page: Page;

test.beforeAll(async ({ browser }) => {
  // The Bot API's sendMessage: token 123:good is accepted, any other refused as Telegram does.
  bot = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const body = data ? (JSON.parse(data) as Record<string, unknown>) : {};
      received.push({ path: req.url ?? '', body });
      const ok = req.url === '/bot123:good/sendMessage';
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { ok: true, result: { message_id: 1 } } : { ok: false, error_code: 401, description: 'Unauthorized' }));
    });
  });
  botUrl = `http://127.0.0.1:${await listen(bot)}`;
  page = await (await browser.newContext()).newPage();
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Tess');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
});

test.afterAll(() => {
  bot.close();
});

test('a Telegram channel is set up through its form and its test outcome shown', async () => {
  await page.getByRole('link', { name: 'Channels' }).click();
  await expect(page.getByRole('heading', { name: 'No notification channels yet' })).toBeVisible();
  const form = page.getByRole('form', { name: 'New channel' });
  await form.getByLabel('Type').selectOption('TELEGRAM');
  // The fields are the schema's: titles, required marks, descriptions as hints; no JSON box.
  await expect(form.getByRole('group', { name: 'TELEGRAM settings' })).toBeVisible();
  await expect(form.getByLabel('Bot token (required)')).toHaveAttribute('type', 'password');
  await expect(form.getByText('A numeric chat id or @channelusername.')).toBeVisible();
  await expect(form.getByRole('textbox', { name: /JSON/ })).toHaveCount(0);
  await form.getByLabel('Name', { exact: true }).fill('Ops Telegram');
  await form.getByLabel('Bot token (required)').fill('123:bad');
  await form.getByLabel('Chat (required)').fill('-100200');
  await form.getByLabel('API URL').fill(botUrl);
  await axe(page, 'channel form');
  await form.getByRole('button', { name: 'Create channel' }).click();

  const card = page.getByRole('article', { name: /Ops Telegram/ });
  await expect(card).toContainText('TELEGRAM');
  // The stored token reads back masked.
  const list = (await rest(page, 'GET', '/notification-channels')) as { notificationChannels: { id: string; config: Record<string, unknown> }[] };
  const created = list.notificationChannels[0];
  expect(created.config).toEqual({ botToken: '********', chatId: '-100200', apiUrl: botUrl });

  // A refused token: the outcome replaces the "waiting" line once the attempt is recorded.
  await card.getByRole('button', { name: 'Send test to Ops Telegram' }).click();
  await expect(card.getByRole('status')).toContainText('Test failed (HTTP 401');
  expect(received.at(-1)?.path).toBe('/bot123:bad/sendMessage');
});

test('the channel is edited through the same form; a blank token keeps the stored one', async () => {
  const card = page.getByRole('article', { name: /Ops Telegram/ });
  await card.getByRole('button', { name: 'Edit Ops Telegram' }).click();
  const form = page.getByRole('form', { name: 'Edit Ops Telegram' });
  // The stored token needs no new value: no required mark, a blank keeps it.
  const token = form.getByLabel('Bot token', { exact: true });
  await expect(token).toHaveValue('');
  await expect(token).toHaveAttribute('placeholder', 'Stored: leave blank to keep');
  await expect(form.getByLabel('Chat (required)')).toHaveValue('-100200');
  await expect(form.getByLabel('API URL')).toHaveValue(botUrl);
  await token.fill('123:good');
  await form.getByLabel('Chat (required)').fill('@ops_room');
  await axe(page, 'channel edit form');
  await page.screenshot({ path: `${shots}channel-edit.png` });
  await form.getByRole('button', { name: 'Save channel' }).click();
  await expect(form).toHaveCount(0);

  await card.getByRole('button', { name: 'Send test to Ops Telegram' }).click();
  await expect(card.getByRole('status')).toContainText('Test delivered (HTTP 200');
  expect(received.at(-1)?.path).toBe('/bot123:good/sendMessage');
  expect(received.at(-1)?.body.chat_id).toBe('@ops_room');

  // Renamed with the token left blank: the stored token still sends.
  await card.getByRole('button', { name: 'Edit Ops Telegram' }).click();
  const again = page.getByRole('form', { name: 'Edit Ops Telegram' });
  await again.getByLabel('Name', { exact: true }).fill('Night Telegram');
  await again.getByRole('button', { name: 'Save channel' }).click();
  const renamed = page.getByRole('article', { name: /Night Telegram/ });
  await renamed.getByRole('button', { name: 'Send test to Night Telegram' }).click();
  await expect(renamed.getByRole('status')).toContainText('Test delivered');
  expect(received.at(-1)?.path).toBe('/bot123:good/sendMessage');
});

test("the channel's events are chosen in its form", async () => {
  const card = page.getByRole('article', { name: /Night Telegram/ });
  await card.getByRole('button', { name: 'Edit Night Telegram' }).click();
  const form = page.getByRole('form', { name: 'Edit Night Telegram' });
  // Every event by default, folded under a summary that counts them.
  await form.getByText('Events: all').click();
  const events = form.getByRole('group', { name: 'Events this channel takes' });
  await expect(events.getByRole('checkbox', { name: 'Alert opened' })).toBeChecked();
  for (const name of ['Monitor degraded', 'Monitor flapping', 'Monitor stable again', 'Incident opened', 'Incident updated', 'Incident resolved']) {
    await events.getByRole('checkbox', { name }).uncheck();
  }
  await expect(form.getByText('Events: 8 of 14')).toBeVisible();
  await axe(page, 'channel events');
  await page.emulateMedia({ colorScheme: 'dark' });
  await axe(page, 'channel events (dark)');
  await events.scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${shots}channel-events-dark.png` });
  await page.emulateMedia({ colorScheme: 'light' });
  await form.getByRole('button', { name: 'Save channel' }).click();
  await expect(form).toHaveCount(0);
  const list = (await rest(page, 'GET', '/notification-channels')) as { notificationChannels: { events: string[] }[] };
  const saved = list.notificationChannels[0].events;
  expect(saved).toContain('alert.opened');
  expect(saved).toContain('test');
  expect(saved).not.toContain('monitor.degraded');
  expect(saved).not.toContain('incident.created');
  // Opened again, the form shows the stored choice.
  await card.getByRole('button', { name: 'Edit Night Telegram' }).click();
  await form.getByText('Events: 8 of 14').click();
  await expect(events.getByRole('checkbox', { name: 'Incident opened' })).not.toBeChecked();
  await expect(events.getByRole('checkbox', { name: 'Alert resolved' })).toBeChecked();
  await form.getByRole('button', { name: 'Cancel' }).click();
});

test('the channel is disabled, enabled and deleted after a confirm', async () => {
  const card = page.getByRole('article', { name: /Night Telegram/ });
  await card.getByRole('button', { name: 'Disable Night Telegram' }).click();
  await expect(card.getByRole('button', { name: 'Enable Night Telegram' })).toBeVisible();
  await expect(card).toContainText('disabled');
  await page.reload();
  await expect(card.getByRole('button', { name: 'Enable Night Telegram' })).toBeVisible();
  let list = (await rest(page, 'GET', '/notification-channels')) as { notificationChannels: { enabled: boolean }[] };
  expect(list.notificationChannels[0].enabled).toBe(false);
  await axe(page, 'disabled channel');
  await card.getByRole('button', { name: 'Enable Night Telegram' }).click();
  await expect(card.getByRole('button', { name: 'Disable Night Telegram' })).toBeVisible();

  await card.getByRole('button', { name: 'Delete Night Telegram' }).click();
  await expect(card.getByRole('group', { name: 'Delete Night Telegram and its delivery history?' })).toBeVisible();
  await card.getByRole('button', { name: 'Yes, delete Night Telegram' }).click();
  await expect(page.getByRole('heading', { name: 'No notification channels yet' })).toBeVisible();
  list = (await rest(page, 'GET', '/notification-channels')) as { notificationChannels: { enabled: boolean }[] };
  expect(list.notificationChannels).toEqual([]);
});

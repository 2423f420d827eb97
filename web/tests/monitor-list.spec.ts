// The monitor list's everyday work in a real browser against the real binary, as a fresh
// user with push monitors (their checks are whatever the test pushes): each row's heartbeat
// bar, 24-hour uptime and response time from one summary request; the bars moving live as
// checks arrive; ten monitors paused, resumed, added to a project, given a channel and deleted
// together; the keyboard shortcuts; a push monitor's URL regenerated and copied (the old one
// refused, the new one accepted); the detail chart's range picker; accessibility (axe, light
// and dark); and the load of a list of 1,000 monitors with heartbeat bars (first contentful
// paint, requests, JavaScript size).
import { expect, test, type Page } from '@playwright/test';
import { readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { axe, BASE as base, rest, shot } from './helpers';

const EMAIL = `kuma+${Date.now()}@example.com`;
const PASSWORD = 'correct horse battery';

/** Axe and a screenshot in the light and the dark scheme. */
async function bothSchemes(page: Page, screen: string, name: string) {
  await page.emulateMedia({ colorScheme: 'light' });
  await axe(page, `${screen} (light)`);
  await shot(page, name);
  await page.emulateMedia({ colorScheme: 'dark' });
  await axe(page, `${screen} (dark)`);
  await shot(page, `${name}-dark`);
  await page.emulateMedia({ colorScheme: 'light' });
}

async function push(token: string, down = false): Promise<number> {
  const r = await fetch(`${base()}/push/${token}${down ? '?status=down' : ''}`, { method: 'POST' });
  return r.status;
}

test.describe.configure({ mode: 'serial' });

let page: Page;
const refused: string[] = [];
/** name → { id, token } of the push monitors made for the list. */
const made = new Map<string, { id: string; token: string }>();
const row = (name: string) => page.getByRole('list', { name: 'Monitors', exact: true }).getByRole('listitem').filter({ hasText: name });

test.beforeAll(async ({ browser }) => {
  const ctx = await browser.newContext();
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base() });
  page = await ctx.newPage();
  page.on('console', (m) => {
    if (m.text().includes('Content Security Policy')) refused.push(m.text());
  });
  await page.goto('/app/sign-up');
  await page.getByLabel('Name').fill('Kuma');
  await page.getByLabel('Email').fill(EMAIL);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  // Ten monitors for the bulk actions and two more that stay out of them.
  for (const name of [...Array.from({ length: 10 }, (_, i) => `batch-${String(i).padStart(2, '0')}`), 'nightly-backup', 'weekly-report']) {
    const m = await rest(page, 'POST', '/monitors', { name, type: 'PUSH', interval: 3600 });
    made.set(name, { id: m.id, token: m.pushToken });
  }
  // Checks to draw: batch-00 goes up, down, up; the others are up once; the backup twice.
  const b0 = made.get('batch-00')!.token;
  for (const down of [false, true, false]) expect(await push(b0, down)).toBe(202);
  for (const [name, m] of made) if (name !== 'batch-00' && name !== 'weekly-report') expect(await push(m.token)).toBe(202);
  expect(await push(made.get('nightly-backup')!.token)).toBe(202);
});

test.afterAll(() => {
  expect(refused).toEqual([]);
});

test('each row shows its heartbeat bar, 24-hour uptime and response time', async () => {
  const summaries: string[] = [];
  page.on('request', (r) => {
    if (new URL(r.url()).pathname.startsWith('/monitors')) summaries.push(new URL(r.url()).pathname);
  });
  await page.goto('/app/');
  await expect(page.getByText('12 monitors', { exact: true })).toBeVisible();
  const b0 = row('batch-00');
  // Shape and colour, and one sentence for a screen reader.
  await expect(b0.getByRole('img', { name: /^Last 3 checks: 2 up, 1 down; latest up$/ })).toBeVisible();
  await expect(b0.locator('.beat')).toHaveCount(3);
  await expect(b0.locator('.beat.b-down')).toHaveCount(1);
  await expect(b0).toContainText('66.67%');
  // A push has no response time: a dash, never "0.0 ms".
  await expect(b0.locator('.latency')).toHaveText(/^Response time —$/);
  await expect(row('nightly-backup').getByRole('img', { name: /^Last 2 checks: 2 up/ })).toBeVisible();
  await expect(row('nightly-backup')).toContainText('100%');
  await expect(row('weekly-report').getByRole('img', { name: 'No checks yet' })).toBeVisible();
  await expect(row('weekly-report')).toContainText('—');
  // The list's data in two requests whatever its length: no request per row.
  expect([...new Set(summaries)].sort()).toEqual(['/monitors', '/monitors/summary']);
});

test('heartbeat bars update live as checks arrive', async () => {
  let navigations = 0;
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) navigations++;
  });
  await expect(page.locator('.live')).toHaveText('Live');
  const backup = row('nightly-backup');
  const weekly = row('weekly-report');
  expect(await push(made.get('nightly-backup')!.token, true)).toBe(202);
  await expect(backup.getByRole('img', { name: /^Last 3 checks: 2 up, 1 down; latest down$/ })).toBeVisible();
  await expect(backup.locator('.beat').last()).toHaveClass(/b-down/);
  expect(await push(made.get('weekly-report')!.token)).toBe(202);
  await expect(weekly.getByRole('img', { name: /^Last 1 check: 1 up; latest up$/ })).toBeVisible();
  await expect(weekly.locator('.latency')).not.toContainText('ms');
  expect(navigations, 'no reload').toBe(0);
});

test('ten monitors are paused, resumed, added to a project and given a channel together', async () => {
  const project = await rest(page, 'POST', '/projects', { name: 'Batch jobs' });
  const channel = await rest(page, 'POST', '/notification-channels', {
    name: 'Ops hook',
    type: 'WEBHOOK',
    config: { url: `${process.env.TARGET_URL}/hook` },
    isDefault: false,
  });
  await page.reload();
  await page.getByLabel('Search', { exact: true }).fill('batch');
  await expect(page.getByText('10 of 12 monitors')).toBeVisible();
  await page.getByRole('checkbox', { name: 'Select all shown' }).check();
  const bar = page.getByRole('toolbar', { name: 'Selected monitors' });
  await expect(bar).toContainText('10 monitors selected');
  await bothSchemes(page, 'monitor list with a selection', 'monitors-bulk');
  await bar.getByRole('button', { name: 'Pause', exact: true }).click();
  await expect(bar.getByRole('status')).toHaveText('Paused 10 monitors.');
  await expect(page.getByRole('list', { name: 'Monitors', exact: true }).getByText('PAUSED', { exact: true })).toHaveCount(10);
  const all = (await rest(page, 'GET', '/monitors')) as { name: string; active: boolean; projectIds: string[]; notificationChannelIds: string[] }[];
  expect(all.filter((m) => m.name.startsWith('batch-') && !m.active)).toHaveLength(10);
  expect(all.filter((m) => !m.active)).toHaveLength(10);

  await bar.getByRole('button', { name: 'Resume', exact: true }).click();
  await expect(bar.getByRole('status')).toHaveText('Resumed 10 monitors.');
  await expect(page.getByRole('list', { name: 'Monitors', exact: true }).getByText('PAUSED', { exact: true })).toHaveCount(0);

  await bar.getByLabel('Project to add the selected monitors to').selectOption({ label: 'Batch jobs' });
  await bar.getByRole('button', { name: 'Add to project' }).click();
  await expect(bar.getByRole('status')).toHaveText('Added 10 monitors to Batch jobs.');

  await bar.getByRole('button', { name: 'Set channels…' }).click();
  await bar.getByRole('checkbox', { name: /Ops hook/ }).check();
  await bar.getByRole('button', { name: 'Apply to 10 monitors' }).click();
  await expect(bar.getByRole('status')).toHaveText('Set the channels of 10 monitors.');
  const after = (await rest(page, 'GET', '/monitors')) as typeof all;
  for (const m of after.filter((m) => m.name.startsWith('batch-'))) {
    expect(m.active).toBe(true);
    expect(m.projectIds).toEqual([project.id]);
    expect(m.notificationChannelIds).toEqual([channel.id]);
  }
  expect(after.find((m) => m.name === 'nightly-backup')!.projectIds).toEqual([]);
});

test('the keyboard: / searches, j and k move, x selects, ? helps, n starts a monitor', async () => {
  await page.goto('/app/');
  await expect(page.getByText('12 monitors', { exact: true })).toBeVisible();
  await page.locator('h1').click();
  await page.keyboard.press('/');
  await expect(page.getByLabel('Search', { exact: true })).toBeFocused();
  await page.keyboard.type('report');
  await expect(page.getByText('1 of 12 monitors')).toBeVisible();
  await page.getByLabel('Search', { exact: true }).fill('');
  await page.locator('h1').click();
  await page.keyboard.press('j');
  await expect(page.getByRole('link', { name: 'batch-00' })).toBeFocused();
  await page.keyboard.press('j');
  await page.keyboard.press('j');
  await page.keyboard.press('k');
  await expect(page.getByRole('link', { name: 'batch-01' })).toBeFocused();
  await page.keyboard.press('x');
  await expect(page.getByRole('checkbox', { name: 'Select batch-01' })).toBeChecked();
  await expect(page.getByRole('toolbar', { name: 'Selected monitors' })).toContainText('1 monitor selected');
  await page.keyboard.press('?');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await expect(help).toBeVisible();
  await axe(page, 'keyboard help');
  await page.keyboard.press('Escape');
  await expect(help).toHaveCount(0);
  // Focus is back on the row it left.
  await expect(page.getByRole('link', { name: 'batch-01' })).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { level: 1 })).toContainText('batch-01');
  await page.goBack();
  await page.locator('h1').click();
  await page.keyboard.press('n');
  await expect(page.getByRole('heading', { name: 'New monitor' })).toBeVisible();
});

test('bulk delete asks first, then deletes the ten', async () => {
  await page.goto('/app/');
  await page.getByLabel('Search', { exact: true }).fill('batch');
  await page.getByRole('checkbox', { name: 'Select all shown' }).check();
  const bar = page.getByRole('toolbar', { name: 'Selected monitors' });
  await bar.getByRole('button', { name: 'Delete 10 monitors' }).click();
  await expect(bar.getByRole('group', { name: 'Delete 10 monitors and their history?' })).toBeVisible();
  await bar.getByRole('button', { name: 'Yes, delete 10 monitors' }).click();
  await expect(page.getByText('No monitor matches these filters.')).toBeVisible();
  await page.getByLabel('Search', { exact: true }).fill('');
  await expect(page.getByText('2 monitors', { exact: true })).toBeVisible();
});

test('a push monitor: regenerate its URL, copy it, paste-ready examples', async () => {
  const { id, token: old } = made.get('nightly-backup')!;
  await page.goto(`/app/monitors/${id}`);
  const section = page.getByRole('region', { name: 'Push URL' });
  await expect(section).toContainText('shown only when it is issued');
  await section.getByRole('button', { name: 'Regenerate push URL' }).click();
  await section.getByRole('button', { name: /^Yes, regenerate push url/i }).click();
  const url = section.getByLabel('Push URL', { exact: true });
  await expect(url).toHaveValue(new RegExp(`^${base()}/push/[A-Za-z0-9_-]{30,}$`));
  const fresh = (await url.inputValue()).split('/push/')[1];
  expect(fresh).not.toBe(old);
  await section.getByRole('button', { name: 'Copy URL' }).click();
  await expect(section.getByRole('status')).toHaveText('Copied to the clipboard.');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`${base()}/push/${fresh}`);
  await expect(section).toContainText(`curl -fsS -m 10 --retry 3 -o /dev/null "${base()}/push/${fresh}"`);
  await expect(section).toContainText('0 */1 * * *');
  await expect(section).toContainText('OnCalendar=0/1:00');
  await section.getByRole('button', { name: 'Copy the cron example' }).click();
  expect(await page.evaluate(() => navigator.clipboard.readText())).toContain(`/push/${fresh}`);
  await bothSchemes(page, 'push URL', 'push-url');
  // The old URL stops at once, and says where to find the new one; the new one works.
  const refusedOld = await fetch(`${base()}/push/${old}`, { method: 'POST' });
  expect(refusedOld.status).toBe(404);
  expect(((await refusedOld.json()) as { message: string }).message).toContain("monitor's page");
  expect(await push(fresh)).toBe(202);
  made.set('nightly-backup', { id, token: fresh });
});

test('the detail chart has a range picker', async () => {
  const range = page.getByRole('group', { name: 'Chart range' });
  for (const [label, key, words] of [
    ['1 h', '1h', 'the last hour'],
    ['24 h', '24h', 'the last 24 hours'],
    ['30 d', '30d', 'the last 30 days'],
    ['90 d', '90d', 'the last 90 days'],
    ['7 d', '7d', 'the last 7 days'],
  ]) {
    await range.getByRole('button', { name: label, exact: true }).click();
    await expect(range.getByRole('button', { name: label, exact: true })).toHaveAttribute('aria-pressed', 'true');
    await expect(page.getByRole('img', { name: `Response time over ${words}` })).toHaveAttribute('data-range', key);
  }
  await axe(page, 'monitor detail with a range');
});

test('1,000 monitors with heartbeat bars: first contentful paint, one summary request, JavaScript size', async ({ browser }) => {
  test.setTimeout(600_000);
  // Push monitors with a few checks each (kept apart from the rows above by a second account).
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  await p.goto('/app/sign-up');
  await p.getByLabel('Name').fill('Load');
  await p.getByLabel('Email').fill(`load+${Date.now()}@example.com`);
  await p.getByLabel('Password').fill(PASSWORD);
  await p.getByRole('button', { name: 'Create account' }).click();
  await expect(p.getByRole('heading', { name: 'No monitors yet' })).toBeVisible();
  const N = 1000;
  const tokens: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const m = await rest(p, 'POST', '/monitors', { name: `job-${String(i).padStart(4, '0')}`, type: 'PUSH', interval: 3600 });
      tokens[i] = m.pushToken;
      for (const down of [false, i % 7 === 0, false]) expect(await push(m.pushToken, down)).toBe(202);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  const cookies = await ctx.cookies();
  await ctx.close();

  const cold = await (await browser.newContext()).newPage();
  await cold.context().addCookies(cookies);
  const requests: string[] = [];
  cold.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await cold.goto('/app/');
  await expect(cold.getByText(`${N} monitors`, { exact: true })).toBeVisible();
  await expect(cold.getByRole('listitem').filter({ hasText: 'job-0000' }).getByRole('img', { name: /^Last 3 checks/ })).toBeVisible();
  const fcp = await cold.evaluate(
    () => performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint')?.startTime ?? -1,
  );
  const listed = await cold.evaluate(() => {
    const e = performance.getEntriesByType('resource').find((r) => r.name.endsWith('/monitors/summary')) as PerformanceResourceTiming | undefined;
    return e ? { ms: e.responseEnd - e.startTime, bytes: e.encodedBodySize } : null;
  });
  // Looked at in both schemes: a thousand rows, their bars and badges.
  await cold.waitForTimeout(500);
  await cold.emulateMedia({ colorScheme: 'light' });
  await shot(cold, 'monitors-1000');
  await cold.emulateMedia({ colorScheme: 'dark' });
  await shot(cold, 'monitors-1000-dark');
  await cold.emulateMedia({ colorScheme: 'light' });
  const rows = await cold.locator('.vrow').count();
  const beats = await cold.locator('.beat').count();
  const assets = fileURLToPath(new URL('../dist/assets/', import.meta.url));
  const jsGzip = readdirSync(assets)
    .filter((f) => f.endsWith('.js.gz'))
    .reduce((n, f) => n + statSync(assets + f).size, 0);
  console.log(
    `monitor list, ${N} monitors with heartbeat bars: first contentful paint ${fcp.toFixed(0)} ms, ` +
      `summary ${listed?.ms.toFixed(0)} ms / ${listed?.bytes} bytes, ${rows} rows and ${beats} marks in the DOM, ` +
      `JavaScript ${(jsGzip / 1024).toFixed(1)} KB gzipped`,
  );
  expect([...new Set(requests.filter((r) => r.startsWith('/monitors')))].sort()).toEqual(['/monitors', '/monitors/summary']);
  expect(rows).toBeLessThan(60);
  expect(fcp).toBeGreaterThan(0);
  // The target is under 1 s on loopback; the bound leaves room for a loaded CI machine.
  expect(fcp).toBeLessThan(2000);
  expect(jsGzip).toBeLessThan(150 * 1024);

  // Live: every one of the 1,000 monitors receives a check (and a seventh of them go down)
  // while the list is on screen. Two figures: the gaps between animation frames (a frame is
  // 16.7 ms at 60 Hz; a gap over 1.5 frames is a dropped one), and the main-thread tasks over
  // 50 ms, the page's own share of any drop. The loopback server and the test's pushes share
  // the machine's cores with the browser, so the frame gaps are also measured idle and while
  // the server takes the same checks for a workspace this page does not show.
  await cold.evaluate(() => {
    const w = window as unknown as { gaps: number[]; busy: number[]; recording: boolean; long: number[]; frames: { script: number; render: number }[] };
    w.gaps = [];
    w.busy = [];
    w.long = [];
    w.frames = [];
    w.recording = true;
    new PerformanceObserver((l) => l.getEntries().forEach((e) => w.long.push(e.duration))).observe({ type: 'longtask', buffered: false });
    // Frames over 50 ms, with the page's script and rendering time in them.
    new PerformanceObserver((l) =>
      l.getEntries().forEach((e) => {
        const f = e as PerformanceEntry & { renderStart: number; scripts: { duration: number }[] };
        w.frames.push({
          script: f.scripts.reduce((n, x) => n + x.duration, 0),
          render: f.renderStart ? f.startTime + f.duration - f.renderStart : 0,
        });
      }),
    ).observe({ type: 'long-animation-frame', buffered: false });
    // A message posted in the frame callback arrives once the frame's script, style, layout
    // and paint are done: its arrival less the frame's start is what the frame cost the main
    // thread (the page's own share, whatever the other processes on the machine do).
    const ch = new MessageChannel();
    let start = 0;
    ch.port1.onmessage = () => w.busy.push(performance.now() - start);
    let last = performance.now();
    const tick = (t: number) => {
      w.gaps.push(t - last);
      last = t;
      start = t;
      ch.port2.postMessage(0);
      if (w.recording) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  // The observer works: an 80 ms task on purpose is seen.
  await cold.evaluate(() => new Promise<void>((ok) => setTimeout(() => {
    const end = performance.now() + 80;
    while (performance.now() < end) { /* busy */ }
    ok();
  }, 0)));
  await expect.poll(() => cold.evaluate(() => (window as unknown as { long: number[] }).long.length)).toBe(1);
  const take = () => cold.evaluate(() => {
    const w = window as unknown as { gaps: number[]; busy: number[]; long: number[]; frames: { script: number; render: number }[] };
    const out = { gaps: w.gaps.slice(1), busy: w.busy.slice(1), long: w.long.slice(), frames: w.frames.slice() };
    w.gaps = [];
    w.busy = [];
    w.long = [];
    w.frames = [];
    return out;
  });
  await take();
  await cold.waitForTimeout(2000);
  const idle = await take();
  // The same load on the server for another workspace, whose checks this page never hears of.
  const other = made.get('weekly-report')!.token;
  let sentElsewhere = 0;
  const elsewhere = async () => {
    while (sentElsewhere < N) {
      sentElsewhere++;
      await push(other);
    }
  };
  await Promise.all(Array.from({ length: 16 }, elsewhere));
  await cold.waitForTimeout(1000);
  const busy = await take();
  const requestsBefore = requests.length;
  const started = Date.now();
  let sent = 0;
  const pusher = async () => {
    while (sent < N) {
      const i = sent++;
      expect(await push(tokens[i], i % 7 === 1)).toBe(202);
    }
  };
  await Promise.all(Array.from({ length: 16 }, pusher));
  const pushMs = Date.now() - started;
  await expect(cold.getByRole('listitem').filter({ hasText: 'job-0000' }).getByRole('img', { name: /^Last 4 checks/ })).toBeVisible();
  await expect(cold.getByRole('listitem').filter({ hasText: 'job-0001' }).getByRole('img', { name: /latest down$/ })).toBeVisible();
  await cold.waitForTimeout(1000);
  const live = await take();
  await cold.evaluate(() => ((window as unknown as { recording: boolean }).recording = false));
  const dropped = (g: number[]) => g.filter((x) => x > 25).length;
  const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(xs.length * 0.95) - 1)] ?? 0;
  const pageScript = live.frames.map((f) => f.script);
  console.log(
    `monitor list, ${N} monitors receiving live checks over ${pushMs} ms: ${live.gaps.length} frames, ` +
      `${dropped(live.gaps)} dropped (gap over 25 ms; idle ${dropped(idle.gaps)} of ${idle.gaps.length}; ` +
      `while another workspace's monitor took as many checks ${dropped(busy.gaps)} of ${busy.gaps.length}), ` +
      `longest gap ${Math.max(...live.gaps).toFixed(1)} ms, main-thread tasks over 50 ms: ${live.long.length}, ` +
      `frames over 50 ms ${live.frames.length} (the page's script in them ${live.frames.reduce((n, f) => n + f.script, 0).toFixed(0)} ms, ` +
      `rendering ${live.frames.reduce((n, f) => n + f.render, 0).toFixed(0)} ms, the most in one frame ${Math.max(0, ...pageScript).toFixed(0)} ms), ` +
      `main thread per frame p95 ${p95(live.busy).toFixed(1)} ms (idle ${p95(idle.busy).toFixed(1)}), max ${Math.max(...live.busy).toFixed(1)} ms`,
  );
  // Results are applied once per frame, whatever their number, only the rows in view whose
  // checks changed are redrawn, and nothing is fetched again. On a machine whose cores the
  // browser shares with the server taking 1,000 checks, some frames still come late with none
  // of the page's tasks running during the gap (Chrome traces, BENCHMARKS.md): the bound is on
  // the share of dropped frames (3.5 % and 8.7 % in two runs at load average 9–10 on two
  // cores), the figures above say where the time went.
  expect(dropped(live.gaps) / live.gaps.length).toBeLessThan(0.1);
  expect(requests.slice(requestsBefore).filter((r) => r.startsWith('/monitors'))).toEqual([]);
  await cold.context().close();
});

// The dashboard scroll benchmark (`npm run bench:scroll`): kept out of the normal browser
// test run because it creates 10,000 monitors and takes minutes. Same server and browser
// setup as tests/, one long test.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: '.',
  testMatch: 'scroll.spec.ts',
  globalSetup: '../tests/global-setup.ts',
  workers: 1,
  retries: 0,
  timeout: 15 * 60_000,
  expect: { timeout: 60_000 },
  reporter: [['list']],
  use: {
    baseURL: process.env.TOCSIN_URL,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    },
    trace: 'off',
  },
});

// Starting the real `tocsin serve` for the browser tests: the debug binary the Rust tests
// built (or $TOCSIN_BIN) on a free port with a fresh data directory and a 1 s minimum check
// interval, with or without an SMTP relay, and with whatever else a test puts in its TOML
// file (a single sign-on provider, say). The global setup starts the shared server with
// one; a test that needs a server without email, or configured otherwise, starts its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';

export function listen(server: Server): Promise<number> {
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok((server.address() as AddressInfo).port)));
}

async function freePort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await new Promise((ok) => s.close(ok));
  return port;
}

async function waitReady(url: string, child: ChildProcess) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`tocsin exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('tocsin did not become ready');
}

export interface Tocsin {
  url: string;
  bin: string;
  dataDir: string;
  stop: () => Promise<void>;
}

/** A fresh server; `smtpPort` makes it mail through the relay listening there, and `toml` is
 *  added to its configuration file (after the lines every test server has). */
export async function startTocsin(opts: { smtpPort?: number; toml?: string } = {}): Promise<Tocsin> {
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-web-'));
  // Every browser test signs up and in from 127.0.0.1: at the default 20 sign-ups and 30
  // sign-ins an address a minute, a quick machine runs the suite into a 429 that no test is
  // about. The limits themselves are tested in the Rust suite.
  writeFileSync(
    join(dir, 'tocsin.toml'),
    `min_interval_seconds = 1\n\n[rate_limits]\nsign_in_per_ip = 10000\nsign_up_per_ip = 10000\n${opts.toml ? `\n${opts.toml}\n` : ''}`,
  );
  const port = await freePort();
  const bin = process.env.TOCSIN_BIN ?? fileURLToPath(new URL('../../target/debug/tocsin', import.meta.url));
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('TOCSIN_') && k !== 'TOCSIN_BIN') delete env[k];
  const args = ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'), '--config', join(dir, 'tocsin.toml')];
  if (opts.smtpPort) args.push('--smtp-url', `smtp://127.0.0.1:${opts.smtpPort}`, '--smtp-from', 'Tocsin <tocsin@example.com>');
  const child = spawn(bin, args, { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, child);
  return {
    url,
    bin,
    dataDir: join(dir, 'data'),
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 200));
    },
  };
}

// Starts what the browser tests run against: the real `tocsin serve` (the debug binary the
// Rust tests built, or $TOCSIN_BIN) on a free port with a fresh data directory and a 1 s
// minimum check interval, and a loopback HTTP target whose answer the tests switch between
// 200 and 500 (`POST /__status/500`), that always fails at `/__down`, and that keeps the
// webhook deliveries posted to `/__hook` (`GET /__hooks`).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';

function listen(server: Server): Promise<number> {
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

export default async function globalSetup() {
  let status = 200;
  // Webhook deliveries posted to `/__hook`, read back with `GET /__hooks`.
  const hooks: unknown[] = [];
  const target = createServer((req, res) => {
    if (req.url === '/__hook' && req.method === 'POST') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        try {
          hooks.push(JSON.parse(body));
        } catch {
          /* not JSON: not ours */
        }
        res.end('ok');
      });
      return;
    }
    if (req.url === '/__hooks') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(hooks));
      return;
    }
    // Always failing, whatever the switch says.
    if (req.url === '/__down') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('broken');
      return;
    }
    const m = req.url?.match(/^\/__status\/(\d{3})$/);
    if (m && req.method === 'POST') {
      status = Number(m[1]);
      res.end('ok');
      return;
    }
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(status === 200 ? 'all good' : 'broken');
  });
  const targetPort = await listen(target);

  const dir = mkdtempSync(join(tmpdir(), 'tocsin-web-'));
  writeFileSync(join(dir, 'tocsin.toml'), 'min_interval_seconds = 1\n');
  const port = await freePort();
  const bin = process.env.TOCSIN_BIN ?? fileURLToPath(new URL('../../target/debug/tocsin', import.meta.url));
  const env = { ...process.env };
  delete env.TOCSIN_DATABASE_URL;
  delete env.TOCSIN_LISTEN;
  delete env.TOCSIN_DATA_DIR;
  const child = spawn(
    bin,
    ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', join(dir, 'data'), '--config', join(dir, 'tocsin.toml')],
    { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, child);
  process.env.TOCSIN_URL = url;
  process.env.TOCSIN_BIN_PATH = bin;
  process.env.TOCSIN_DATA_PATH = join(dir, 'data');
  process.env.TARGET_URL = `http://127.0.0.1:${targetPort}`;

  return async () => {
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    target.close();
  };
}

// Starts what the browser tests run against: the real `tocsin serve` (see server.ts) with an
// SMTP relay that is a real SMTP server on loopback keeping every mail (see mail.ts), and a
// loopback HTTP target whose answer the tests switch between 200 and 500
// (`POST /__status/500`), that always fails at `/__down`, answers JSON at `/__json`, and that keeps the webhook
// deliveries posted to `/__hook` (`GET /__hooks`). Tests of a server without email start their own (server.ts).
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen, startTocsin } from './server';
import { startMailSink } from './mail';

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
    // A JSON answer for JSON-path checks.
    if (req.url === '/__json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', version: 3 }));
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

  const mailDir = join(mkdtempSync(join(tmpdir(), 'tocsin-mail-')), 'mail');
  const sink = await startMailSink(mailDir);
  const tocsin = await startTocsin({ smtpPort: sink.port });
  process.env.TOCSIN_URL = tocsin.url;
  process.env.TOCSIN_BIN_PATH = tocsin.bin;
  process.env.TOCSIN_DATA_PATH = tocsin.dataDir;
  process.env.TOCSIN_MAIL_DIR = mailDir;
  process.env.TARGET_URL = `http://127.0.0.1:${targetPort}`;

  return async () => {
    await tocsin.stop();
    target.close();
    await sink.stop();
  };
}

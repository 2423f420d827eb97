// Starts what the browser tests run against: the real `tocsin serve` (see server.ts) with an
// SMTP relay that is a real SMTP server on loopback keeping every mail (see mail.ts), and a
// loopback HTTP target whose answer the tests switch between 200 and 500
// (`POST /__status/500`). Tests of a server without email start their own (server.ts).
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen, startTocsin } from './server';
import { startMailSink } from './mail';

export default async function globalSetup() {
  let status = 200;
  const target = createServer((req, res) => {
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

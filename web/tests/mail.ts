// The mail the shared test server sends: a real SMTP server on loopback (nodemailer's
// smtp-server, started by the global setup) writes each message it receives to
// $TOCSIN_MAIL_DIR as JSON; tests read them back by recipient.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';
import type { AddressInfo } from 'node:net';

export interface Mail {
  to: string[];
  raw: string;
}

/** Starts the sink writing to `dir`; its port and a stop function. */
export async function startMailSink(dir: string): Promise<{ port: number; stop: () => Promise<void> }> {
  mkdirSync(dir, { recursive: true });
  let n = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream: NodeJS.ReadableStream, session: { envelope: { rcptTo: { address: string }[] } }, done: (e?: Error) => void) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const mail: Mail = { to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), raw: Buffer.concat(chunks).toString('utf8') };
        writeFileSync(join(dir, `${String(++n).padStart(6, '0')}.json`), JSON.stringify(mail));
        done();
      });
    },
  });
  const port = await new Promise<number>((ok) => server.listen(0, '127.0.0.1', () => ok((server.server.address() as AddressInfo).port)));
  return { port, stop: () => new Promise((ok) => server.close(() => ok())) };
}

/** The mails to `to` so far, oldest first (waits up to 10 s for at least one). */
export async function mailsTo(to: string): Promise<Mail[]> {
  const dir = process.env.TOCSIN_MAIL_DIR!;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = readdirSync(dir)
      .sort()
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Mail)
      .filter((m) => m.to.includes(to.toLowerCase()));
    if (found.length || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The first link under `path` in the newest mail to `to`. */
export async function linkIn(to: string, path: string): Promise<string> {
  const mails = await mailsTo(to);
  const raw = (mails.at(-1)?.raw ?? '').replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const m = raw.match(new RegExp(`https?://[^\\s"<>]*${path.replace(/[?.]/g, '\\$&')}[^\\s"<>]*`));
  if (!m) throw new Error(`no ${path} link in the mail to ${to}`);
  return m[0];
}

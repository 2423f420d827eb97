// A push monitor's URL as it is shown the one time it exists in clear (at creation and after
// a regenerate: the server keeps only its hash), with a copy button and ready-to-paste
// examples for a shell, cron and a systemd timer, timed from the monitor's interval.
import { useState } from 'preact/hooks';
import { copy } from './ui';

/** A cron schedule of every N minutes (or hours) for an interval in seconds; cron cannot go
 *  under a minute. */
function cronEvery(seconds: number): string {
  const minutes = Math.max(1, Math.round(seconds / 60));
  if (minutes < 60) return minutes === 1 ? '* * * * *' : `*/${minutes} * * * *`;
  const hours = Math.max(1, Math.round(minutes / 60));
  return hours >= 24 ? '0 0 * * *' : `0 */${hours} * * *`;
}

/** A systemd `OnCalendar=` for the interval. */
function calendarEvery(seconds: number): string {
  const minutes = Math.max(1, Math.round(seconds / 60));
  if (minutes < 60) return `*:0/${minutes}`;
  const hours = Math.max(1, Math.round(minutes / 60));
  return hours >= 24 ? 'daily' : `0/${hours}:00`;
}

function Snippet({ title, text }: { title: string; text: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="snippet">
      <div class="snippet-head">
        <strong>{title}</strong>
        <button
          type="button"
          aria-label={`Copy the ${title.toLowerCase()} example`}
          onClick={async () => setCopied(await copy(text))}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <pre>
        <code>{text}</code>
      </pre>
    </div>
  );
}

export function PushUrl({ token, interval }: { token: string; interval: number }) {
  const url = `${location.origin}/push/${token}`;
  const [copied, setCopied] = useState<boolean | null>(null);
  const curl = `curl -fsS -m 10 --retry 3 -o /dev/null "${url}"`;
  const cron = `${cronEvery(interval)}  /path/to/your-job && ${curl}`;
  const systemd = `# /etc/systemd/system/tocsin-push.service
[Unit]
Description=Check in with Tocsin

[Service]
Type=oneshot
ExecStart=/usr/bin/curl -fsS -m 10 --retry 3 -o /dev/null "${url}"

# /etc/systemd/system/tocsin-push.timer
[Unit]
Description=Check in with Tocsin on a schedule

[Timer]
OnCalendar=${calendarEvery(interval)}
Persistent=true

[Install]
WantedBy=timers.target

# then: systemctl enable --now tocsin-push.timer`;
  return (
    <div class="push-url">
      <p>
        It is shown only now (the server keeps only a hash of it): copy it somewhere safe. Add <code>?status=down</code> to
        report a failure, and <code>&amp;msg=…</code> for a message.
      </p>
      <p class="secret">
        <label for="push-url-value" class="sr-only">
          Push URL
        </label>
        <input id="push-url-value" data-testid="push-url" readOnly value={url} onFocus={(e) => (e.target as HTMLInputElement).select()} />
        <button type="button" onClick={async () => setCopied(await copy(url))}>
          Copy URL
        </button>
        {copied !== null && (
          <span role="status">{copied ? 'Copied to the clipboard.' : 'The browser refused the clipboard: select the URL and copy it.'}</span>
        )}
      </p>
      <Snippet title="Shell" text={curl} />
      <Snippet title="Cron" text={cron} />
      <Snippet title="Systemd timer" text={systemd} />
    </div>
  );
}

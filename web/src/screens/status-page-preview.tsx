// A live preview of the public status page under draft branding, drawn in the dashboard
// before anything is saved. It mirrors the layout of the server's page (public/html.rs) and
// uses the server's own stylesheet (public/page.css, imported at build time, so the two
// cannot drift), with the draft colours as its CSS variables and the draft custom CSS after
// it, as the server writes them.
//
// Why not an iframe of /s/{slug}: a draft page answers 404 there, and that page's CSP admits
// only its own style block by hash, so draft styles could not be put into it. Here the page
// is drawn inside a shadow root whose styles are constructed stylesheets (not inline style
// elements, which the dashboard's CSP forbids), so the draft CSS reaches the preview and
// nothing else on the dashboard. Figures the server computes (uptime bars, incidents) are
// not invented: the bars show "no data" and statuses follow the components' monitors now.
import { render } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import pageCss from '../../../crates/tocsin/src/public/page.css?raw';
import type { Schemas } from '../api/client';

export interface Draft {
  name: string;
  logoUrl: string;
  primaryColor: string;
  backgroundColor: string;
  customCss: string;
  footerLinks: { label: string; url: string }[];
  language: string;
  timezone: string;
}

export const isHex = (c: string) => /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(c);

/** The page's selectors for the document, pointed at the preview's own root instead. */
function scoped(css: string): string {
  return css
    .replace(/:root\b/g, ':host')
    .replace(/(^|[\s,{}>+~(])html\b/g, '$1:host')
    .replace(/(^|[\s,{}>+~(])body\b/g, '$1.pv-body');
}

const LEVELS = ['s-ok', 's-mnt', 's-deg', 's-part', 's-major'] as const;
const HEADLINES: Record<string, string> = {
  's-ok': 'All systems operational',
  's-mnt': 'Maintenance in progress',
  's-deg': 'Some systems are degraded',
  's-part': 'Partial system outage',
  's-major': 'Major system outage',
};
const LABELS: Record<string, string> = {
  's-ok': 'Operational',
  's-mnt': 'Under maintenance',
  's-deg': 'Degraded performance',
  's-part': 'Partial outage',
  's-major': 'Major outage',
};

/** What the public page makes of a monitor's status (public/snapshot.rs `of_monitor`). */
function classOf(m: Schemas['Monitor'] | undefined): (typeof LEVELS)[number] {
  if (!m || !m.active) return 's-ok';
  if (m.status === 'DOWN') return 's-major';
  if (m.status === 'DEGRADED' || m.status === 'CHANGED') return 's-deg';
  if (m.status === 'MAINTENANCE') return 's-mnt';
  return 's-ok';
}

/** The page's status from its components' (public/snapshot.rs `overall`): the worst one,
 *  except that a major outage of some components but not all is a partial outage. */
export function overallOf(classes: (typeof LEVELS)[number][]): (typeof LEVELS)[number] {
  const worst = LEVELS[Math.max(0, ...classes.map((c) => LEVELS.indexOf(c)))];
  return worst === 's-major' && classes.some((c) => c !== 's-major') ? 's-part' : worst;
}

/** Now, written in the draft's language and zone, or why it cannot be. */
function nowIn(language: string, timezone: string): string {
  const zone = timezone || 'UTC';
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
  } catch {
    return `(unknown time zone “${zone}”)`;
  }
  const options: Intl.DateTimeFormatOptions = {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZone: zone, timeZoneName: 'short',
  };
  try {
    return new Intl.DateTimeFormat(language || 'en', options).format(new Date());
  } catch {
    // A language tag the browser does not know: English words, the zone still applied.
    return new Intl.DateTimeFormat('en', options).format(new Date());
  }
}

function Page(props: { draft: Draft; historyDays: number; components: Schemas['StatusPageComponent'][]; monitors: Schemas['Monitor'][] }) {
  const { draft: d, components } = props;
  const classes = components.map((c) => classOf(props.monitors.find((m) => m.id === c.monitorId)));
  const overall = overallOf(classes);
  const groups: { group: string | null; members: number[] }[] = [];
  components.forEach((c, i) => {
    const g = c.group ?? null;
    const found = g !== null && groups.find((x) => x.group === g);
    if (found) found.members.push(i);
    else groups.push({ group: g, members: [i] });
  });
  // Only images the dashboard may load (its CSP allows this site and data: URLs).
  const logoShown = d.logoUrl && (d.logoUrl.startsWith('data:image/') || d.logoUrl.startsWith(location.origin + '/'));
  return (
    <div class="pv-body" lang={d.language || 'en'}>
      <div class="top">
        <div class="wrap">
          <div class="pv-h1">
            {logoShown ? <img class="logo" src={d.logoUrl} alt={d.name} /> : d.name}
            {d.logoUrl && !logoShown && <span class="pv-logo-note"> (logo from {hostOf(d.logoUrl)})</span>}
          </div>
        </div>
      </div>
      <div class="wrap">
        <section class={`overall ${overall}`}>
          <h2>{HEADLINES[overall]}</h2>
          <p>Updated <span class="pv-time">{nowIn(d.language, d.timezone)}</span></p>
        </section>
        <section>
          <h2>Components</h2>
          {components.length === 0 && <p class="none">No components yet.</p>}
          {groups.map((g) => (
            <div class="group">
              {g.group && <h3>{g.group}</h3>}
              <ul class="components">
                {g.members.map((i) => (
                  <li class="component">
                    <div class="row">
                      <span class="name">{components[i].name}</span>
                      <span class={`st ${classes[i]}`}>{LABELS[classes[i]]}</span>
                    </div>
                    {components[i].description && <p class="desc">{components[i].description}</p>}
                    <div class="bars" aria-hidden="true"><b class="n" /></div>
                    <p class="legend">
                      <span>{props.historyDays} days ago</span>
                      <span>Uptime on the public page</span>
                      <span>Today</span>
                    </p>
                  </li>
                ))}
              </ul>
            </div>
          ))}
        </section>
        <section>
          <h2>Past incidents</h2>
          <p class="none">No incidents reported.</p>
        </section>
      </div>
      <div class="bottom">
        <div class="wrap">
          <div class="pv-links">
            {d.footerLinks.filter((l) => l.label).map((l) => (
              <>
                <a href={l.url || undefined}>{l.label}</a> ·{' '}
              </>
            ))}
            <a>RSS</a> · <a>Atom</a>
          </div>
          <p class="powered">Powered by Tocsin</p>
        </div>
      </div>
    </div>
  );
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid address';
  }
}

export function PagePreview(props: { draft: Draft; historyDays: number; components: Schemas['StatusPageComponent'][]; monitors: Schemas['Monitor'][] }) {
  const host = useRef<HTMLDivElement>(null);
  const sheets = useRef<{ base: CSSStyleSheet; vars: CSSStyleSheet; custom: CSSStyleSheet } | null>(null);
  const { draft } = props;

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const root = el.shadowRoot ?? el.attachShadow({ mode: 'open' });
    if (!sheets.current) {
      const base = new CSSStyleSheet();
      // The preview is a box in the dashboard, not a whole window: no page margin, and the
      // header's heading drawn like the page's h1.
      base.replaceSync(`${scoped(pageCss)}\n.pv-body{margin:0;min-height:100%}.pv-h1{margin:0;font-size:1.5rem;font-weight:700}.pv-logo-note{font-size:.8rem;font-weight:400}.pv-links a{cursor:default}`);
      sheets.current = { base, vars: new CSSStyleSheet(), custom: new CSSStyleSheet() };
      root.adoptedStyleSheets = [sheets.current.base, sheets.current.vars, sheets.current.custom];
    }
    const vars = [
      isHex(draft.primaryColor) ? `--brand:${draft.primaryColor};` : '',
      isHex(draft.backgroundColor) ? `--bg-light:${draft.backgroundColor};` : '',
    ].join('');
    sheets.current.vars.replaceSync(vars ? `:host{${vars}}` : '');
    // Rules the browser cannot parse are dropped, as they would be on the page.
    sheets.current.custom.replaceSync(scoped(draft.customCss));
    render(<Page {...props} />, root);
  });
  useEffect(() => () => {
    if (host.current?.shadowRoot) render(null, host.current.shadowRoot);
  }, []);

  return <div class="pv-frame" ref={host} data-testid="branding-preview" inert />;
}

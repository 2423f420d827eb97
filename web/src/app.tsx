// The shell: session check, header with navigation, workspace switcher and sign-out, the
// banners (a viewer's read-only note among them), and the screen for the current path. Without a session every path but the sign-up page shows
// the sign-in page, which returns to where the person was going (`?next=`).
import { signal } from '@preact/signals';
import { useEffect, useState } from 'preact/hooks';
import { api, authPost, call, getSession, sessionLost, type Schemas, type Session } from './api/client';
import { liveMode, startLive, stopLive } from './live';
import { Link, match, navigate, path } from './router';
import { localNext } from './next';
import { workspaceZone } from './format';
import { SignIn, SignUp } from './screens/auth';
import { Consent } from './screens/consent';
import { MonitorList } from './screens/monitors';
import { MonitorDetail } from './screens/monitor-detail';
import { MonitorForm } from './screens/monitor-form';
import { AlertDetail, Alerts } from './screens/alerts';
import { ApiKeys } from './screens/api-keys';
import { StatusPageDetail, StatusPages } from './screens/status-pages';
import { statusPageScreen } from './screens/status-page-admin';
import { Channels } from './screens/channels';
import { Workspace } from './screens/workspace';
import { AcceptInvitation } from './screens/invitation';
import { Maintenance } from './screens/maintenance';
import { Projects } from './screens/projects';
import { Escalation } from './screens/escalation';
import { McpGrants } from './screens/mcp-grants';
import { Billing, BillingBanner } from './screens/billing';
import { Settings } from './screens/settings';
import { VerifyEmailBanner } from './verify-email';
import { EmailBanner, loadEmailReadiness } from './email-banner';
import { canWrite, role } from './role';

export const session = signal<Session | null | undefined>(undefined);
const workspaces = signal<Schemas['MyWorkspace'][]>([]);

export async function refreshSession() {
  const s = await getSession();
  // The role is known before the screens are drawn, so a viewer is never shown, even for a
  // moment, buttons that would fail.
  if (s) {
    workspaces.value = await call(api.GET('/workspaces')).catch(() => []);
    role.value = workspaces.value.find((w) => w.id === s.workspace.id)?.role;
  } else {
    role.value = undefined;
  }
  session.value = s;
  sessionLost.value = false;
  if (s) {
    startLive();
    loadEmailReadiness();
    // Dates show in the workspace's zone unless this browser chose another (format.ts).
    call(api.GET('/workspace/settings')).then(
      (w) => (workspaceZone.value = w.timezone),
      () => undefined,
    );
  } else {
    stopLive();
  }
}

async function signOut() {
  await authPost('/auth/sign-out', {}).catch(() => undefined);
  session.value = null;
  role.value = undefined;
  stopLive();
  navigate('/sign-in');
}

async function switchWorkspace(id: string) {
  await call(api.POST('/workspaces/{workspace_id}/activate', { params: { path: { workspace_id: id } } }));
  await refreshSession();
  navigate('/');
}

const NAV: [string, string][] = [
  ['/', 'Monitors'],
  ['/alerts', 'Alerts'],
  ['/status-pages', 'Status pages'],
  ['/channels', 'Channels'],
  ['/maintenance', 'Maintenance'],
  ['/api-keys', 'API keys'],
  ['/workspace', 'Workspace'],
  ['/projects', 'Projects'],
  ['/escalation', 'Escalation'],
  ['/mcp-grants', 'MCP grants'],
  ['/billing', 'Billing'],
  ['/settings', 'Settings'],
];

function Header() {
  const s = session.value;
  const p = path.value;
  // Under 600 px the navigation folds behind a menu button; it folds again on each move.
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [p]);
  return (
    <header class={`top${open ? ' menu-open' : ''}`}>
      <a class="brand" href="/app/">Tocsin</a>
      {s && (
        <button type="button" class="menu-button" aria-expanded={open} aria-controls="main-nav" onClick={() => setOpen((o) => !o)}>
          Menu
        </button>
      )}
      {s && (
        <nav aria-label="Main" id="main-nav">
          {NAV.map(([href, label]) => {
            const here = href === '/' ? p === '/' || p.startsWith('/monitors') : p.startsWith(href);
            return (
              <Link href={href} aria-current={here ? 'page' : undefined}>
                {label}
              </Link>
            );
          })}
        </nav>
      )}
      {s && (
        <div class="who">
          <span class={`live live-${liveMode.value}`} title="How this page stays current">
            {liveMode.value === 'stream' ? 'Live' : liveMode.value === 'polling' ? 'Polling' : '…'}
          </span>
          <label class="sr-only" for="ws-switch">Workspace</label>
          <select
            id="ws-switch"
            value={s.workspace.id}
            onChange={(e) => switchWorkspace((e.target as HTMLSelectElement).value)}
          >
            {(workspaces.value.length ? workspaces.value : [{ id: s.workspace.id, name: s.workspace.name }]).map((w) => (
              <option value={w.id}>{w.name}</option>
            ))}
          </select>
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        </div>
      )}
    </header>
  );
}

function Screen() {
  const p = path.value;
  const s = session.value;
  if (p === '/sign-up') return <SignUp />;
  if (!s || sessionLost.value) return <SignIn />;
  if (p === '/sign-in') {
    // Already signed in: straight on to where the sign-in would have led.
    const next = localNext(new URLSearchParams(location.search).get('next'));
    if (next && !next.startsWith('/app')) location.replace(next);
    else navigate(next ?? '/', true);
    return null;
  }
  if (p === '/oauth/consent') return <Consent />;
  if (p === '/invitations/accept') return <AcceptInvitation />;
  let m: Record<string, string> | null;
  if (p === '/' || p === '/monitors') return <MonitorList />;
  if (p === '/monitors/new') return <MonitorForm />;
  if ((m = match('/monitors/:id/edit', p))) return <MonitorForm id={m.id} />;
  if ((m = match('/monitors/:id', p))) return <MonitorDetail id={m.id} />;
  if (p === '/alerts') return <Alerts />;
  if ((m = match('/alerts/:id', p))) return <AlertDetail id={m.id} />;
  if (p === '/api-keys') return <ApiKeys />;
  if (p === '/channels') return <Channels />;
  if (p === '/maintenance') return <Maintenance />;
  if (p === '/workspace') return <Workspace />;
  if (p === '/projects') return <Projects />;
  if (p === '/escalation') return <Escalation />;
  if (p === '/mcp-grants') return <McpGrants />;
  if (p === '/billing') return <Billing />;
  if (p === '/settings') return <Settings />;
  if (p === '/status-pages') return <StatusPages />;
  if (p.startsWith('/status-pages/')) {
    const section = statusPageScreen(p);
    if (section) return section;
  }
  if ((m = match('/status-pages/:id', p))) return <StatusPageDetail id={m.id} />;
  return (
    <main id="main">
      <h1>Not found</h1>
      <p>
        There is no screen here. <Link href="/">Go to your monitors</Link>.
      </p>
    </main>
  );
}

export function App() {
  useEffect(() => {
    refreshSession();
  }, []);
  // What needs email changes with the work done on the screens: read it again on each move.
  const p = path.value;
  useEffect(() => {
    if (session.value) loadEmailReadiness();
  }, [p]);
  if (session.value === undefined) {
    return (
      <main id="main" class="loading" aria-busy="true">
        Loading…
      </main>
    );
  }
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header />
      {session.value && session.value.user.emailVerified === false && !sessionLost.value && (
        <VerifyEmailBanner email={session.value.user.email} />
      )}
      {session.value && !sessionLost.value && <EmailBanner role={role.value} />}
      {session.value && !sessionLost.value && <BillingBanner key={session.value.workspace.id} />}
      {session.value && !sessionLost.value && !canWrite() && (
        <p class="notice read-only-note" role="note" data-testid="read-only-note">
          You have read-only access to this workspace (viewer).
        </p>
      )}
      <Screen />
    </>
  );
}

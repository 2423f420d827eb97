// Sign in and sign up. `?next=` (a path on this server, such as the OAuth authorize URL)
// is where the person goes afterwards, after a password or a single sign-on provider.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, authPost } from '../api/client';
import { refreshSession } from '../app';
import { Link, navigate, path, query, search } from '../router';
import { ErrorNote, Field } from '../ui';
import { localNext } from '../next';
import { loadProviders, type Provider } from '../sso';

function safeNext(): string | null {
  // A person sent to the sign-in page from a deeper page of the app comes back to it.
  const here = path.value;
  const fallback = here !== '/' && here !== '/sign-in' && here !== '/sign-up' ? `/app${here}${search.value}` : null;
  // Only pages of this origin (`localNext`): never `//host`, `/\thost` or `https://elsewhere`.
  return localNext(query('next') ?? fallback);
}

async function afterSignIn() {
  const next = safeNext();
  if (next && !next.startsWith('/app')) {
    location.assign(next);
    return;
  }
  await refreshSession();
  navigate(next ?? '/', true);
}

function nextSuffix(): string {
  const next = safeNext();
  return next ? `?next=${encodeURIComponent(next)}` : '';
}

// One "Sign in with <name>" link per single sign-on provider (`GET /auth/sso/providers`);
// the server's start page takes `next` and sends the person to the provider.
function SsoButtons() {
  const [providers, setProviders] = useState<Provider[]>([]);
  useEffect(() => {
    loadProviders().then(setProviders);
  }, []);
  if (providers.length === 0) return null;
  const next = encodeURIComponent(safeNext() ?? '/app/');
  return (
    <div class="card sso">
      {providers.map((p) => (
        <a key={p.id} class="button" href={`/auth/sso/${encodeURIComponent(p.id)}/start?next=${next}`}>
          Sign in with {p.name}
        </a>
      ))}
    </div>
  );
}

export function SignIn() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    try {
      await authPost('/auth/sign-in/email', { email: f.get('email'), password: f.get('password') });
      await afterSignIn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const wrong = error instanceof ApiError && error.code === 'INVALID_CREDENTIALS';
  return (
    <main id="main" class="auth">
      <h1>Sign in to Tocsin</h1>
      <SsoButtons />
      <form onSubmit={onSubmit} class="card">
        {wrong ? <p class="notice error" role="alert">Wrong email or password.</p> : <ErrorNote error={error} />}
        <Field label="Email" id="email">
          <input id="email" name="email" type="email" autoComplete="username" required />
        </Field>
        <Field label="Password" id="password">
          <input id="password" name="password" type="password" autoComplete="current-password" required />
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
      <p>
        New here? <Link href={`/sign-up${nextSuffix()}`}>Create an account</Link>
      </p>
    </main>
  );
}

export function SignUp() {
  const [error, setError] = useState<ApiError | unknown>(null);
  const [busy, setBusy] = useState(false);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    try {
      await authPost('/auth/sign-up/email', {
        name: f.get('name'),
        email: f.get('email'),
        password: f.get('password'),
      });
      await afterSignIn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  return (
    <main id="main" class="auth">
      <h1>Create your Tocsin account</h1>
      <form onSubmit={onSubmit} class="card">
        <ErrorNote error={error} />
        <Field label="Name" id="name" error={fe('name')}>
          <input id="name" name="name" autoComplete="name" required />
        </Field>
        <Field label="Email" id="email" error={fe('email')}>
          <input id="email" name="email" type="email" autoComplete="username" required />
        </Field>
        <Field label="Password" id="password" error={fe('password')} hint="At least 8 characters.">
          <input id="password" name="password" type="password" autoComplete="new-password" minLength={8} required />
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Create account
        </button>
      </form>
      <p>
        Already have an account? <Link href={`/sign-in${nextSuffix()}`}>Sign in</Link>
      </p>
    </main>
  );
}

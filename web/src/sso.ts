// The single sign-on providers this server offers (`GET /auth/sso/providers`, answered without
// a credential): the sign-in page's buttons and the members list's sign-in methods name them.
export interface Provider {
  id: string;
  name: string;
}

/** The providers, or none when the server has none or could not be asked: a missing list only
 *  hides buttons and leaves ids unnamed. */
export async function loadProviders(): Promise<Provider[]> {
  try {
    const r = await fetch('/auth/sso/providers', { credentials: 'same-origin' });
    if (!r.ok) return [];
    const list: unknown = await r.json();
    return Array.isArray(list) ? (list as Provider[]) : [];
  } catch {
    return [];
  }
}

/** A member's `signInMethods` in words: "Password", and each `sso:<id>` as its provider's name
 *  (the id when the server no longer lists it). */
export function signInMethods(methods: string[], providers: Provider[]): string {
  const words = methods.map((m) => {
    if (m === 'password') return 'Password';
    if (m.startsWith('sso:')) {
      const id = m.slice(4);
      return providers.find((p) => p.id === id)?.name ?? id;
    }
    return m;
  });
  return words.length ? words.join(', ') : '—';
}

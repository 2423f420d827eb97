// Where `?next=` may send a person after signing in: only to a page of this origin. The
// value is judged as the browser will read it, not by its first characters: browsers drop
// tabs and newlines inside a URL and read `\` as `/`, so `/\t/evil.example`, `/\n/evil.example`
// and `/\evil.example` all mean `//evil.example`, another origin. Anything with a control
// character or a backslash is refused outright; the rest is resolved against this origin and
// kept only if it stays on it. The server applies the same rule to every `next` it builds
// (`crates/tocsin/src/http/next.rs`).

/** The path (with query and fragment) `next` leads to on `origin`, or null when it would leave it. */
export function localNext(next: string | null | undefined, origin: string = location.origin): string | null {
  if (!next || !next.startsWith('/')) return null;
  if (/[\u0000-\u001f\u007f-\u009f\\]/.test(next)) return null;
  let url: URL;
  try {
    url = new URL(next, origin);
  } catch {
    return null;
  }
  if (url.origin !== origin) return null;
  return `${url.pathname}${url.search}${url.hash}`;
}

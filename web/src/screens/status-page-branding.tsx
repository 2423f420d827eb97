// A status page's branding (name, logo, favicon, colours, custom CSS, footer links, language,
// time zone) in a form beside a live preview that follows every keystroke; saved in one
// `PATCH /status-pages/{page_id}` with If-Match, where an empty field clears its key. A viewer
// gets the saved settings as a list beside the same preview, and no form (role.ts).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { canWrite } from '../role';
import { ErrorNote, Field, useLoad } from '../ui';
import { SectionHead, usePage } from './status-page-admin';
import { isHex, PagePreview, type Draft } from './status-page-preview';

interface Form extends Draft {
  faviconUrl: string;
}

const LANGUAGES: [string, string][] = [
  ['en', 'English'], ['de', 'German'], ['fr', 'French'], ['es', 'Spanish'],
  ['pt', 'Portuguese'], ['it', 'Italian'], ['nl', 'Dutch'],
];

function fromPage(p: Schemas['StatusPage']): Form {
  const b = p.branding;
  return {
    name: p.name,
    logoUrl: b.logoUrl ?? '',
    faviconUrl: b.faviconUrl ?? '',
    primaryColor: b.primaryColor ?? '',
    backgroundColor: b.backgroundColor ?? '',
    customCss: b.customCss ?? '',
    footerLinks: (b.footerLinks ?? []).map((l) => ({ ...l })),
    language: b.language,
    timezone: b.timezone,
  };
}

const orNull = (s: string) => (s.trim() === '' ? null : s.trim());

/** `#rgb` or `#rrggbb` as `#rrggbb` (what a colour input takes), else null. */
function sixDigits(v: string): string | null {
  if (!isHex(v)) return null;
  return v.length === 4 ? `#${v[1]}${v[1]}${v[2]}${v[2]}${v[3]}${v[3]}`.toLowerCase() : v.toLowerCase();
}

function ColourField(props: {
  id: string;
  label: string;
  hint: string;
  value: string;
  /** The colour the page uses when none is set (the public pages' own, page.css). */
  fallback: string;
  error?: string;
  onInput: (v: string) => void;
}) {
  return (
    <Field label={props.label} id={props.id} error={props.error} hint={props.hint}>
      <div class="colour-pair">
        <input
          id={props.id}
          value={props.value}
          placeholder={props.fallback}
          aria-describedby={`${props.id}-hint`}
          aria-invalid={props.error ? 'true' : undefined}
          onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
        />
        <input
          type="color"
          aria-label={`${props.label}: picker`}
          value={sixDigits(props.value) ?? props.fallback}
          onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
        />
      </div>
    </Field>
  );
}

export function Branding({ id }: { id: string }) {
  const { loaded, error: loadError, set } = usePage(id);
  const comps = useLoad(() => call(api.GET('/status-pages/{page_id}/components', { params: { path: { page_id: id } } })), [id]);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);
  // Statuses in the preview follow the monitors while the screen is open, as the page's do
  // (and a list that failed to load once is asked for again).
  useEffect(() => {
    const t = setInterval(() => monitors.reload(), 5000);
    return () => clearInterval(t);
  }, []);
  const [form, setForm] = useState<Form | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const zones = useMemo(() => {
    try {
      return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf('timeZone');
    } catch {
      return [];
    }
  }, []);

  useEffect(() => {
    if (loaded && !form) setForm(fromPage(loaded.page));
  }, [loaded]);

  const page = loaded?.page;
  if (!page || !form) {
    return (
      <main id="main" aria-busy="true">
        <SectionHead id={id} page={page} title="Branding" error={loadError} />
        Loading…
      </main>
    );
  }
  const preview = (
    <section class="preview-pane" aria-labelledby="pv-h">
      <h2 id="pv-h">Preview</h2>
      <p class="muted" id="pv-note">
        The public page with {canWrite() ? 'this draft, before saving' : 'this branding'}. Statuses follow your monitors now;
        uptime bars and incidents appear on the <a href={`/s/${page.slug}`} target="_blank" rel="noopener">public page</a>.
      </p>
      <PagePreview draft={form} historyDays={page.historyDays} components={comps.data ?? []} monitors={monitors.data ?? []} />
    </section>
  );
  if (!canWrite()) {
    const b = page.branding;
    const facts: [string, string][] = [
      ['Page name', page.name],
      ['Logo URL', b.logoUrl ?? 'None'],
      ['Favicon URL', b.faviconUrl ?? 'None'],
      ['Brand colour', b.primaryColor ?? 'Default'],
      ['Background colour', b.backgroundColor ?? 'Default'],
      ['Language', LANGUAGES.find(([c]) => c === b.language)?.[1] ?? b.language],
      ['Time zone', b.timezone],
      ['Custom CSS', b.customCss ? `${b.customCss.split('\n').length} lines` : 'None'],
      ['Footer links', (b.footerLinks ?? []).map((l) => `${l.label} (${l.url})`).join(', ') || 'None'],
    ];
    return (
      <main id="main" class="wide">
        <SectionHead id={id} page={page} title="Branding" error={loadError} />
        <div class="branding">
          <section class="card" aria-labelledby="br-h">
            <h2 id="br-h">Look of the public page</h2>
            <dl class="billing-facts branding-facts">
              {facts.map(([k, v]) => (
                <>
                  <dt>{k}</dt>
                  <dd>{v}</dd>
                </>
              ))}
            </dl>
          </section>
          {preview}
        </div>
      </main>
    );
  }
  const put = (patch: Partial<Form>) => {
    setSaved(false);
    setForm({ ...form, ...patch });
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const changed = JSON.stringify(form) !== JSON.stringify(fromPage(page));

  const etag = loaded?.etag;
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const links = form.footerLinks.filter((l) => l.label.trim() || l.url.trim()).map((l) => ({ label: l.label.trim(), url: l.url.trim() }));
    const req = api.PATCH('/status-pages/{page_id}', {
      params: { path: { page_id: id }, header: etag ? { 'If-Match': etag } : {} },
      body: {
        name: form.name.trim(),
        branding: {
          logoUrl: orNull(form.logoUrl),
          faviconUrl: orNull(form.faviconUrl),
          primaryColor: orNull(form.primaryColor),
          backgroundColor: orNull(form.backgroundColor),
          customCss: form.customCss.trim() === '' ? null : form.customCss,
          footerLinks: links,
          language: orNull(form.language),
          timezone: orNull(form.timezone),
        },
      },
    });
    try {
      const next = await call(req);
      set({ page: next, etag: (await req).response.headers.get('etag') });
      setForm(fromPage(next));
      setSaved(true);
    } catch (err) {
      setError(err);
    }
  };

  return (
    <main id="main" class="wide">
      <SectionHead id={id} page={page} title="Branding" error={loadError} />
      <div class="branding">
        <form class="card form" onSubmit={save} aria-labelledby="br-h">
          <h2 id="br-h">Look of the public page</h2>
          <ErrorNote error={error} />
          <Field label="Page name" id="b-name" error={fe('name')}>
            <input id="b-name" value={form.name} required maxLength={100} onInput={(e) => put({ name: (e.target as HTMLInputElement).value })} />
          </Field>
          <Field label="Logo URL" id="b-logo" error={fe('branding.logoUrl')} hint="An https address; shown in the header instead of the name.">
            <input id="b-logo" type="url" value={form.logoUrl} placeholder="https://example.com/logo.svg" aria-describedby="b-logo-hint" onInput={(e) => put({ logoUrl: (e.target as HTMLInputElement).value })} />
          </Field>
          <Field label="Favicon URL" id="b-favicon" error={fe('branding.faviconUrl')}>
            <input id="b-favicon" type="url" value={form.faviconUrl} placeholder="https://example.com/favicon.ico" onInput={(e) => put({ faviconUrl: (e.target as HTMLInputElement).value })} />
          </Field>
          <div class="grid2">
            <ColourField id="b-primary" label="Brand colour" hint="Header and links, #rgb or #rrggbb." value={form.primaryColor} fallback="#0b5cad" error={fe('branding.primaryColor')} onInput={(v) => put({ primaryColor: v })} />
            <ColourField id="b-bg" label="Background colour" hint="Light scheme only; dark keeps its own." value={form.backgroundColor} fallback="#f6f8fa" error={fe('branding.backgroundColor')} onInput={(v) => put({ backgroundColor: v })} />
          </div>
          <div class="grid2">
            <Field label="Language" id="b-lang" error={fe('branding.language')} hint="Dates are written in it.">
              <select id="b-lang" value={form.language} aria-describedby="b-lang-hint" onChange={(e) => put({ language: (e.target as HTMLSelectElement).value })}>
                {LANGUAGES.some(([c]) => c === form.language) ? null : <option value={form.language}>{form.language}</option>}
                {LANGUAGES.map(([c, n]) => <option value={c}>{n} ({c})</option>)}
              </select>
            </Field>
            <Field label="Time zone" id="b-tz" error={fe('branding.timezone')} hint="IANA name, such as Europe/Berlin.">
              <input id="b-tz" value={form.timezone} list="b-tz-list" aria-describedby="b-tz-hint" onInput={(e) => put({ timezone: (e.target as HTMLInputElement).value })} />
              <datalist id="b-tz-list">{zones.map((z) => <option value={z} />)}</datalist>
            </Field>
          </div>
          <Field label="Custom CSS" id="b-css" error={fe('branding.customCss')} hint="Added after the page's styles. No @import, no url() except data:image, no <.">
            <textarea id="b-css" class="code" rows={6} value={form.customCss} aria-describedby="b-css-hint" onInput={(e) => put({ customCss: (e.target as HTMLTextAreaElement).value })} />
          </Field>
          <fieldset>
            <legend>Footer links</legend>
            {fe('branding.footerLinks') && <small class="error" role="alert">{fe('branding.footerLinks')}</small>}
            {form.footerLinks.length === 0 && <p class="muted">No footer links. Add one to point readers at your site or support.</p>}
            {form.footerLinks.map((l, i) => (
              <div class="inline-form footer-link">
                <Field label={`Link ${i + 1} text`} id={`b-fl-${i}`}>
                  <input id={`b-fl-${i}`} value={l.label} maxLength={60} onInput={(e) => put({ footerLinks: form.footerLinks.map((x, j) => (j === i ? { ...x, label: (e.target as HTMLInputElement).value } : x)) })} />
                </Field>
                <Field label={`Link ${i + 1} URL`} id={`b-fu-${i}`}>
                  <input id={`b-fu-${i}`} type="url" value={l.url} onInput={(e) => put({ footerLinks: form.footerLinks.map((x, j) => (j === i ? { ...x, url: (e.target as HTMLInputElement).value } : x)) })} />
                </Field>
                <button type="button" onClick={() => put({ footerLinks: form.footerLinks.filter((_, j) => j !== i) })} aria-label={`Remove link ${i + 1}`}>Remove</button>
              </div>
            ))}
            {form.footerLinks.length < 10 && (
              <button type="button" onClick={() => put({ footerLinks: [...form.footerLinks, { label: '', url: '' }] })}>Add footer link</button>
            )}
          </fieldset>
          <div class="actions">
            <button type="submit" class="primary" disabled={!changed}>Save branding</button>
            <button type="button" disabled={!changed} onClick={() => put(fromPage(page))}>Discard changes</button>
            <span role="status" class="muted">{saved ? 'Saved: the public page shows it within seconds.' : changed ? 'Unsaved changes (shown in the preview).' : ''}</span>
          </div>
        </form>
        {preview}
      </div>
    </main>
  );
}

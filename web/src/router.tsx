// A small history router: the path under /app/ is a signal, links push history entries.
import { signal } from '@preact/signals';
import type { ComponentChildren } from 'preact';

const BASE = '/app';

function current(): string {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '/';
  return p || '/';
}

export const path = signal(current());
export const search = signal(location.search);

export function navigate(to: string, replace = false) {
  const url = to.startsWith('/app') ? to : BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  path.value = current();
  search.value = location.search;
  window.scrollTo(0, 0);
}

addEventListener('popstate', () => {
  path.value = current();
  search.value = location.search;
});

export function query(name: string): string | null {
  return new URLSearchParams(search.value).get(name);
}

export function Link(props: {
  href: string;
  children: ComponentChildren;
  class?: string;
  'aria-current'?: 'page';
  'aria-label'?: string;
}) {
  const { href, children, ...rest } = props;
  return (
    <a
      {...rest}
      href={BASE + href}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

/** Matches `pattern` like `/monitors/:id` against the current path. */
export function match(pattern: string, p: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = p.split('/');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}

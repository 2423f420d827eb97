// Markdown to sanitised HTML for previews, loaded on demand (`import('./markdown')`) so the
// parser and sanitiser are fetched only by the screens that preview Markdown. The options
// match what the server renders on save (CommonMark with tables, strikethrough and task
// lists, sanitised): the preview shows what the public page will.
import DOMPurify from 'dompurify';
import { marked } from 'marked';

// The dashboard's CSP loads images only from this site and data: URLs, so an image from
// elsewhere is shown as its description here (the public page loads it).
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName !== 'IMG') return;
  const src = node.getAttribute('src') ?? '';
  if (src.startsWith('data:image/') || (src.startsWith('/') && !src.startsWith('//'))) return;
  node.removeAttribute('src');
  node.setAttribute('alt', `[image: ${node.getAttribute('alt') || src}]`);
});

export function toHtml(markdown: string): string {
  const html = marked.parse(markdown, { async: false, gfm: true, breaks: false }) as string;
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}

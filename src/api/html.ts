/**
 * The few HTML answers the API gives to browsers (a receipt's page, the
 * trigger-oracle document, the 404 page): content negotiation and one page
 * shell. The shell is the built site's own 404 page (src/layouts/Site.astro),
 * so server-rendered pages carry the same header, footer and styles as every
 * static page; without a build, a minimal shell stands in.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HTTPResponse, type H3Event } from 'h3';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** True when a browser asks for HTML (and the caller did not put JSON first). */
export function wantsHtml(event: H3Event): boolean {
  const accept = event.req.headers.get('accept') ?? '';
  return accept.includes('text/html') && !accept.startsWith('application/json');
}

const CSS = `.server .ok{color:#047857}.server .bad{color:#b91c1c}
.server td code,.server pre{white-space:pre-wrap;word-break:break-all}
.server th[scope=row]{white-space:nowrap}.server li,.server p{overflow-wrap:anywhere}`;

const FALLBACK = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Fuse Gate</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#111827}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem;border-bottom:1px solid #e5e7eb;vertical-align:top}</style></head>
<body><main id="main"></main></body></html>`;

let shell = FALLBACK;
let notFoundPage: string | undefined;

/** Uses the built site's 404 page as the shell of server-rendered pages (called once at start-up). */
export function useSiteShell(staticDir: string): void {
  const file = join(staticDir, '404.html');
  if (!existsSync(file)) return;
  notFoundPage = readFileSync(file, 'utf8');
  shell = notFoundPage
    .replace(/<meta name="description"[^>]*>/, '')
    .replace(/<link rel="canonical"[^>]*>/, '')
    .replace(/(<main\b[^>]*>)[\s\S]*<\/main>/, '$1</main>');
}

/**
 * A whole page in the site shell: `body` is trusted HTML (escape what goes into it).
 * `account`, when given, replaces the header's account region (a signed-in page's links and sign-out form);
 * `description` is the page's meta description (public pages have one, for search engines).
 */
export function htmlPage(title: string, body: string, extraCss = '', account?: string, description?: string): string {
  return shell
    .replace(
      /<title>[\s\S]*?<\/title>/,
      () =>
        `<title>${escapeHtml(title)} | Fuse Gate</title>${description ? `<meta name="description" content="${escapeHtml(description)}">` : ''}`,
    )
    .replace(/<div class="account" id="account">[\s\S]*?<\/div>/, (m) =>
      account === undefined ? m : `<div class="account" id="account" data-session="1">${account}</div>`,
    )
    .replace('</head>', () => `<style>${CSS}${extraCss}</style></head>`)
    .replace(/(<main\b[^>]*>)<\/main>/, (_m, open: string) => `${open}<div class="server">${scrollableTables(body)}</div></main>`);
}

/** Wraps every table in the site's scrolling region, as the static pages do, so a phone scrolls the table, not the page. */
function scrollableTables(body: string): string {
  let n = 0;
  return body
    .replace(/<table>/g, () => `<div class="table-wrap" role="region" tabindex="0" aria-label="Table ${++n}"><table>`)
    .replace(/<\/table>/g, '</table></div>');
}

export function htmlResponse(html: string, status = 200): HTTPResponse {
  return new HTTPResponse(html, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', vary: 'accept' },
  });
}

/** The site's 404 page for a browser, or undefined (then the caller answers problem+json). */
export function notFoundHtml(event: H3Event): HTTPResponse | undefined {
  if (!notFoundPage || !wantsHtml(event) || (event.req.method !== 'GET' && event.req.method !== 'HEAD')) return undefined;
  return htmlResponse(notFoundPage, 404);
}

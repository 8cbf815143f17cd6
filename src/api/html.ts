/**
 * The few HTML answers the API gives to browsers (a receipt's verify page, the
 * trigger-oracle document): content negotiation and one page shell, so they
 * look like one product without pulling the Astro layout into the server.
 */
import { HTTPResponse, type H3Event } from 'h3';

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** True when a browser asks for HTML (and the caller did not put JSON first). */
export function wantsHtml(event: H3Event): boolean {
  const accept = event.req.headers.get('accept') ?? '';
  return accept.includes('text/html') && !accept.startsWith('application/json');
}

const CSS = `body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#111827}
h1{font-size:1.6rem}.ok{color:#047857}.bad{color:#b91c1c}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.4rem;border-bottom:1px solid #e5e7eb;vertical-align:top}
code,pre{font-family:ui-monospace,monospace;font-size:.85rem;word-break:break-all;white-space:pre-wrap}`;

/** A whole page: `body` is trusted HTML (escape what goes into it). */
export function htmlPage(title: string, body: string, extraCss = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Fuse Gate</title>
<style>${CSS}${extraCss}</style></head>
<body><main>${body}</main></body></html>`;
}

export function htmlResponse(html: string): HTTPResponse {
  return new HTTPResponse(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', vary: 'accept' } });
}

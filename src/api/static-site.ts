/**
 * Serves the Astro build (pages, catalog JSON, .well-known documents) with
 * strong ETags, Cache-Control and, for machine-readable documents, CORS.
 * The file index is built once at start-up: the build never changes while
 * the process runs. The build names placeholder origins (src/urls.ts); each
 * text document gets the running service's URLs put in when it is loaded, and
 * its ETag is computed over the bytes actually served.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveStatic, type H3Event } from 'h3';
import { substituteOrigins, type Urls } from '../urls.ts';
import { commonHeaders, requestIdFor } from './common-headers.ts';

interface Asset {
  path: string;
  size: number;
  mtime: Date;
  etag: string;
  type: string;
  /** The file's bytes, read once at start-up (the build is small and never changes while running). */
  body: Buffer<ArrayBuffer>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webmanifest': 'application/manifest+json',
  // Catalog paths of SPEC 4.2 without an extension (e.g. /api/v1/clear/catalog) are JSON.
  '': 'application/json; charset=utf-8',
};

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.isFile()) out.push(full);
  }
  return out;
}

/** The strong ETag of a body: a quoted prefix of its SHA-256 (base64url). One rule for static and live documents. */
export function strongEtag(body: string | Uint8Array): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

const isText = (type: string) => /^(text\/|application\/(json|xml|manifest\+json)|image\/svg\+xml)/.test(type);

/** A built file as served: text with the placeholder origins replaced by `urls`. */
export function servedBody(file: string, urls: Urls): Buffer<ArrayBuffer> {
  const raw = readFileSync(file) as Buffer<ArrayBuffer>;
  if (!isText(TYPES[extname(file)] ?? '')) return raw;
  return Buffer.from(substituteOrigins(raw.toString('utf8'), urls), 'utf8') as Buffer<ArrayBuffer>;
}

export function indexStaticSite(root: string, urls: Urls): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(root)) return assets;
  for (const file of walk(root)) {
    const id = '/' + relative(root, file).split(sep).join('/');
    const st = statSync(file);
    const body = servedBody(file, urls);
    const etag = strongEtag(body);
    assets.set(id, {
      path: file,
      size: body.length,
      mtime: st.mtime,
      etag,
      type: TYPES[extname(file)] ?? 'application/octet-stream',
      body,
    });
  }
  return assets;
}

/** Documents for machines: readable from any origin, cached briefly. */
export function isMachineDocument(id: string): boolean {
  return id.endsWith('.json') || id.startsWith('/.well-known/') || id.startsWith('/schemas/') || (extname(id) === '' && !id.endsWith('/'));
}

/**
 * The header's account region as built (src/layouts/Site.astro) and as served
 * to a browser that carries the signed-in hint cookie (`fg_signed_in`, set at
 * sign-in; it grants nothing). Pages ship no script, so the server swaps it.
 */
const ACCOUNT_ANON = '<div class="account" id="account"><a href="/signin">Sign in</a><a href="/signup" class="signup">Sign up</a></div>';
const ACCOUNT_SIGNED_IN = '<div class="account" id="account"><a href="/dashboard">Dashboard</a><a href="/signout">Sign out</a></div>';
const hasSignedInHint = (cookie: string | null | undefined) => /(?:^|;\s*)fg_signed_in=1(?:;|$)/.test(cookie ?? '');

/** The page as a signed-in person sees it, or undefined when it has no account region (not a page). */
function signedInVariant(
  a: Asset,
  cache: WeakMap<Asset, { body: Buffer; etag: string } | null>,
): { body: Buffer; etag: string } | undefined {
  let v = cache.get(a);
  if (v === undefined) {
    const text = a.type.startsWith('text/html') ? a.body.toString('utf8') : '';
    const body = text.includes(ACCOUNT_ANON) ? Buffer.from(text.replace(ACCOUNT_ANON, ACCOUNT_SIGNED_IN), 'utf8') : undefined;
    v = body ? { body, etag: strongEtag(body) } : null;
    cache.set(a, v);
  }
  return v ?? undefined;
}

function cacheControl(id: string): string {
  if (id.startsWith('/_astro/')) return 'public, max-age=31536000, immutable';
  return 'public, max-age=300, must-revalidate';
}

export function staticSiteHandler(root: string, urls: Urls) {
  const assets = indexStaticSite(root, urls);
  const has = (id: string) => assets.has(id) || assets.has(id.replace(/\/$/, '') + '/index.html');
  const variants = new WeakMap<Asset, { body: Buffer; etag: string } | null>();
  const handler = async (event: H3Event) => {
    const method = event.req.method;
    if ((method === 'GET' || method === 'HEAD') && hasSignedInHint(event.req.headers.get('cookie'))) {
      const path = decodeURIComponent(event.url.pathname);
      const a = assets.get(path) ?? assets.get(path.replace(/\/$/, '') + '/index.html');
      const v = a && signedInVariant(a, variants);
      if (v) {
        // Personal: never kept by a shared cache; the browser revalidates by ETag.
        const headers = { 'content-type': a.type, etag: v.etag, 'cache-control': 'private, no-cache', vary: 'cookie' };
        if (event.req.headers.get('if-none-match') === v.etag) return new Response(null, { status: 304, headers });
        return new Response(method === 'HEAD' ? null : new Uint8Array(v.body), {
          headers: { ...headers, 'content-length': String(v.body.length) },
        });
      }
    }
    let matched: string | undefined;
    let matchedAsset: Asset | undefined;
    const res = await serveStatic(event, {
      fallthrough: true,
      indexNames: ['/index.html'],
      getMeta(id) {
        const a = assets.get(id) ?? assets.get(id.replace(/\/$/, '') + '/index.html');
        if (!a) return undefined;
        matched = id;
        matchedAsset = a;
        return { size: a.size, mtime: a.mtime, etag: a.etag, type: a.type };
      },
      getContents(id) {
        const a = assets.get(id) ?? assets.get(id.replace(/\/$/, '') + '/index.html');
        return a?.body;
      },
    });
    if (res === undefined || matched === undefined) return undefined;
    event.res.headers.set('cache-control', cacheControl(matched));
    if (isMachineDocument(matched)) event.res.headers.set('access-control-allow-origin', '*');
    // A page differs for a signed-in browser (its header): caches keep the two apart.
    if (matchedAsset?.type.startsWith('text/html')) event.res.headers.set('vary', 'cookie');
    return res;
  };
  /** True when the build has a file at `id` (for 405 and the CORS preflight). */
  return Object.assign(handler, { has, assets });
}

/** Answers a Node request itself when it can (true), else leaves it untouched (false). */
export type NodeFastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * The built site's plain GETs, answered at the Node level: the path looked up
 * in one map, the answer written with headers computed at start-up. The same
 * bytes and headers as the h3 path above (staticSiteHandler, plus the request
 * id and CORS headers every answer carries), without building a web Request,
 * a Headers object and a Response per request (a catalog GET was about 0.4 of
 * a bare node:http server through h3). Anything else falls through to h3:
 * conditional requests (If-None-Match, If-Modified-Since: h3 answers 304),
 * paths with a query, an escape or not exactly as built, and any path an API
 * route matches (`routed`), so a route always wins over a file as before.
 */
export function staticFastPath(assets: Map<string, Asset>, routed: (path: string) => boolean): NodeFastPath {
  const answers = new Map<string, { headers: string[]; body: Buffer }>();
  const add = (path: string, id: string) => {
    const a = assets.get(id)!;
    if (routed(path)) return;
    const mtime = new Date(a.mtime);
    mtime.setMilliseconds(0);
    answers.set(path, {
      headers: [
        'last-modified',
        mtime.toUTCString(),
        'etag',
        a.etag,
        'content-type',
        a.type,
        'content-length',
        String(a.size),
        'cache-control',
        cacheControl(id),
        // A page differs for a signed-in browser (its header): caches keep the two apart.
        ...(a.type.startsWith('text/html') ? ['vary', 'cookie'] : []),
      ],
      body: a.body,
    });
  };
  // A directory's index answers at "/dir/" and "/dir" (as serveStatic's indexNames do), unless a file is named so.
  for (const id of assets.keys()) {
    if (!id.endsWith('/index.html')) continue;
    const dir = id.slice(0, -'index.html'.length);
    add(dir, id);
    if (dir !== '/') add(dir.slice(0, -1), id);
  }
  for (const id of assets.keys()) add(id, id);
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const answer = answers.get(req.url ?? '');
    if (!answer || req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) return false;
    // A signed-in browser gets its own header: h3 answers that variant.
    if (hasSignedInHint(req.headers.cookie)) return false;
    res.writeHead(200, [...commonHeaders(requestIdFor(req)), ...answer.headers]);
    // Node sends no body for HEAD, and keeps the content-length.
    res.end(answer.body);
    return true;
  };
}

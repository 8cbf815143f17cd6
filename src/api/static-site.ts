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
import { serveStatic, type H3Event } from 'h3';
import { substituteOrigins, type Urls } from '../urls.ts';

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
    assets.set(id, { path: file, size: body.length, mtime: st.mtime, etag, type: TYPES[extname(file)] ?? 'application/octet-stream', body });
  }
  return assets;
}

/** Documents for machines: readable from any origin, cached briefly. */
export function isMachineDocument(id: string): boolean {
  return (
    id.endsWith('.json') ||
    id.startsWith('/.well-known/') ||
    id.startsWith('/schemas/') ||
    (extname(id) === '' && !id.endsWith('/'))
  );
}

function cacheControl(id: string): string {
  if (id.startsWith('/_astro/')) return 'public, max-age=31536000, immutable';
  return 'public, max-age=300, must-revalidate';
}

export function staticSiteHandler(root: string, urls: Urls) {
  const assets = indexStaticSite(root, urls);
  const has = (id: string) => assets.has(id) || assets.has(id.replace(/\/$/, '') + '/index.html');
  const handler = async (event: H3Event) => {
    let matched: string | undefined;
    const res = await serveStatic(event, {
      fallthrough: true,
      indexNames: ['/index.html'],
      getMeta(id) {
        const a = assets.get(id) ?? assets.get(id.replace(/\/$/, '') + '/index.html');
        if (!a) return undefined;
        matched = id;
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
    return res;
  };
  /** True when the build has a file at `id` (for 405 and the CORS preflight). */
  return Object.assign(handler, { has });
}

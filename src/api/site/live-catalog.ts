/**
 * A catalog with live fields: the file as built (same URLs and bytes as the
 * static one in STATIC_DIR, or built afresh when there is no build), with the
 * fields `overlay` returns laid over it at each request. Public, with a strong
 * ETag over the answered bytes (304 on If-None-Match) and revalidated on every use.
 */
import { join } from 'node:path';
import { HTTPResponse } from 'h3';
import { catalogByKey } from '../../catalog/catalogs.ts';
import { servedUrls } from '../../config.ts';
import type { AppContext } from '../context.ts';
import { servedBody, strongEtag } from '../static-site.ts';
import type { RouteDoc, Router } from '../router.ts';
import { operation } from '../operation.ts';

export function liveCatalog(
  router: Router,
  ctx: AppContext,
  route: { path: string; catalog: string },
  overlay: () => Promise<Record<string, unknown>>,
  doc: RouteDoc,
): void {
  let built: Record<string, unknown> | undefined;
  const urls = servedUrls(ctx.config);
  const base = (): Record<string, unknown> => {
    if (!built) {
      try {
        built = JSON.parse(servedBody(join(ctx.config.STATIC_DIR, route.path.replace(/^\//, '')), urls).toString('utf8')) as Record<
          string,
          unknown
        >;
      } catch {
        built = catalogByKey(route.catalog).build(urls) as Record<string, unknown>;
      }
    }
    return built;
  };
  operation(router, ctx, { method: 'GET', path: route.path, ...doc }, async ({ event }) => {
    const text = JSON.stringify({ ...base(), ...(await overlay()) });
    const etag = strongEtag(text);
    const headers = {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'public, max-age=0, must-revalidate',
      etag,
      'access-control-allow-origin': '*',
    };
    if (event.req.headers.get('if-none-match') === etag) return new HTTPResponse(null, { status: 304, headers });
    return new HTTPResponse(text, { headers });
  });
}

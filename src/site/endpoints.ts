/**
 * Prerendered JSON endpoints: every catalog is built at `astro build` time for
 * the placeholder origins of src/urls.ts; the server puts its own URLs in.
 */
import type { APIRoute } from 'astro';
import { catalogByKey } from '../catalog/catalogs.ts';
import { BUILD_ORIGINS, type Urls } from '../urls.ts';

export function jsonResponse(body: unknown): Response {
  return new Response(JSON.stringify(body, null, 2) + '\n', {
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** The GET handler of a catalog path. */
export function catalogRoute(key: string): APIRoute {
  const c = catalogByKey(key);
  return () => jsonResponse(c.build(BUILD_ORIGINS));
}

export function buildUrls(): Urls {
  return BUILD_ORIGINS;
}

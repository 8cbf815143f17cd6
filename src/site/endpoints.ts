/**
 * Prerendered JSON endpoints: every catalog is built at `astro build` time for
 * the placeholder origins of src/urls.ts; the server puts its own URLs in.
 */
import type { APIRoute } from 'astro';
import { catalogByKey } from '../catalog/catalogs.ts';
import { BUILD_ORIGINS, type Urls } from '../urls.ts';

/**
 * Compact JSON: these documents are read by machines, and a crawler's GET of a
 * catalog costs in proportion to its bytes (indentation made them a third larger).
 * A browser's JSON viewer and `jq` indent it for people.
 */
export function jsonResponse(body: unknown): Response {
  return new Response(JSON.stringify(body) + '\n', {
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

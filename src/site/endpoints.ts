/**
 * Prerendered JSON endpoints: every catalog is built at `astro build` time for
 * the SITE_URL / BASE_URL of the build environment.
 */
import type { APIRoute } from 'astro';
import { catalogByKey, urlsFromEnv, type Urls } from '../catalog/catalogs.ts';

export function jsonResponse(body: unknown): Response {
  return new Response(JSON.stringify(body, null, 2) + '\n', {
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** The GET handler of a catalog path. */
export function catalogRoute(key: string): APIRoute {
  const c = catalogByKey(key);
  return () => jsonResponse(c.build(urlsFromEnv()));
}

export function buildUrls(): Urls {
  return urlsFromEnv();
}

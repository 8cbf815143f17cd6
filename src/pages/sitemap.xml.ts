import type { APIRoute } from 'astro';
import { getCollection } from 'astro:content';
import { CATALOGS } from '../catalog/catalogs.ts';
import { DISCOVERY_NAMES } from '../catalog/discovery.ts';
import { SCHEMA_IDS } from '../catalog/json-schema.ts';
import { ALL_PAGES } from '../site/nav.ts';
import { buildUrls } from '../site/endpoints.ts';
import { docPath } from '../site/docs.ts';
import { areaPath, areas } from '../site/reference.ts';

export const prerender = true;

/** Every page and document of the build (sitemaps.org 0.9). */
export const GET: APIRoute = async () => {
  const { site } = buildUrls();
  const paths = [
    ...ALL_PAGES,
    ...areas.map((a) => areaPath(a.tag)),
    ...CATALOGS.map((c) => c.path),
    ...DISCOVERY_NAMES.map((n) => `/.well-known/${n}.json`),
    '/diligence/offer.json',
    '/diligence/one-pager.txt',
    ...SCHEMA_IDS.map((id) => `/schemas/${id}.json`),
    ...(await getCollection('docs')).map((d) => docPath(d.id)),
  ];
  const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;');
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' +
    paths.map((p) => `  <url><loc>${esc(site + (p === '/' ? '/' : p))}</loc></url>`).join('\n') +
    '\n</urlset>\n';
  return new Response(body, { headers: { 'content-type': 'application/xml; charset=utf-8' } });
};

import type { APIRoute } from 'astro';
import { buildUrls } from '../site/endpoints.ts';

export const prerender = true;
export const GET: APIRoute = () =>
  new Response(
    `User-agent: *\nAllow: /\n# /go/ links count clicks (relay partners): crawlers must not inflate them.\nDisallow: /go/\nSitemap: ${buildUrls().site}/sitemap.xml\n`,
    { headers: { 'content-type': 'text/plain; charset=utf-8' } },
  );

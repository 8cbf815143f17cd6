import type { APIRoute } from 'astro';
import { buildUrls } from '../site/endpoints.ts';

export const prerender = true;
export const GET: APIRoute = () =>
  new Response(`User-agent: *\nAllow: /\nSitemap: ${buildUrls().site}/sitemap.xml\n`, { headers: { 'content-type': 'text/plain; charset=utf-8' } });

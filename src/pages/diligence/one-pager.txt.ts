import type { APIRoute } from 'astro';
import { diligenceOnePager } from '../../catalog/discovery.ts';
import { buildUrls } from '../../site/endpoints.ts';

export const prerender = true;
export const GET: APIRoute = () =>
  new Response(diligenceOnePager(buildUrls()), { headers: { 'content-type': 'text/plain; charset=utf-8' } });

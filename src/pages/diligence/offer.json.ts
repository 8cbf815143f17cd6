import type { APIRoute } from 'astro';
import { diligenceOffer } from '../../catalog/discovery.ts';
import { buildUrls, jsonResponse } from '../../site/endpoints.ts';

export const prerender = true;
export const GET: APIRoute = () => jsonResponse(diligenceOffer(buildUrls()));

/**
 * The OpenAPI description as a static file too, for static hosting of the
 * site and for the link check; the running service answers /openapi.json
 * itself (src/api/openapi.ts), with its own BASE_URL in `servers`.
 */
import type { APIRoute } from 'astro';
import openapi from '../generated/openapi.json' with { type: 'json' };
import { jsonResponse } from '../site/endpoints.ts';

export const prerender = true;

export const GET: APIRoute = () => jsonResponse(openapi);

/**
 * Build step (before `astro build`): writes the OpenAPI description of every
 * route to src/generated/openapi.json, from which the site renders its API
 * reference page. The routes are described without a database or keys, and
 * this script fails loudly if registering one touches either
 * (src/api/describe.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { describeRoutes } from '../src/api/describe.ts';
import { buildOpenApi } from '../src/api/openapi.ts';
import { gateEndpoints } from '../src/api/gate-endpoints.ts';
import { loadConfig } from '../src/config.ts';
import { BUILD_ORIGINS } from '../src/urls.ts';

const config = loadConfig(process.env);
const router = describeRoutes(config);
const out = new URL('../src/generated/openapi.json', import.meta.url);
mkdirSync(new URL('.', out), { recursive: true });
// The reference page is built from it: placeholder origins, substituted by the server (src/urls.ts).
writeFileSync(out, JSON.stringify(buildOpenApi(router.routes, BUILD_ORIGINS), null, 1) + '\n');
const endpoints = gateEndpoints(router.routes);
writeFileSync(new URL('../src/generated/gate-endpoints.json', import.meta.url), JSON.stringify(endpoints, null, 1) + '\n');
console.log(`openapi: ${router.routes.length} routes -> src/generated/openapi.json; gate.json: ${endpoints.length} endpoints`);

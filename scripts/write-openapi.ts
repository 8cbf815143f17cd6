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
import { loadConfig } from '../src/config.ts';

const config = loadConfig(process.env);
const router = describeRoutes(config);
const out = new URL('../src/generated/openapi.json', import.meta.url);
mkdirSync(new URL('.', out), { recursive: true });
writeFileSync(out, JSON.stringify(buildOpenApi(router.routes, { gate: config.BASE_URL, site: config.SITE_URL }), null, 1) + '\n');
console.log(`openapi: ${router.routes.length} routes -> src/generated/openapi.json`);

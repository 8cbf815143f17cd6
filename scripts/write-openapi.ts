/**
 * Build step (before `astro build`): writes the OpenAPI description of every
 * route to src/generated/openapi.json, from which the site renders its API
 * reference page. The routes are registered on a bare router with a context
 * that has configuration but no database or keys: registering a route must not
 * touch either (this script fails loudly if one does).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { H3 } from 'h3';
import { registerRoutes } from '../src/api/app.ts';
import type { AppContext } from '../src/api/context.ts';
import { buildOpenApi } from '../src/api/openapi.ts';
import { Router } from '../src/api/router.ts';
import { loadConfig } from '../src/config.ts';
import { BUILD_ORIGINS } from '../src/urls.ts';
import { VERSION } from '../src/version.ts';

const unavailable = (what: string) =>
  new Proxy({}, { get: (_t, prop) => { throw new Error(`route registration touched ${what}.${String(prop)}`); } });

const config = loadConfig(process.env);
const ctx: AppContext = {
  config,
  ledger: unavailable('ledger') as AppContext['ledger'],
  keyring: unavailable('keyring') as AppContext['keyring'],
  version: VERSION,
  log: () => undefined,
};
const router = new Router(new H3());
registerRoutes(router, ctx);
const out = new URL('../src/generated/openapi.json', import.meta.url);
mkdirSync(new URL('.', out), { recursive: true });
// The reference page is built from it: placeholder origins, substituted by the server (src/urls.ts).
writeFileSync(out, JSON.stringify(buildOpenApi(router.routes, BUILD_ORIGINS), null, 1) + '\n');
console.log(`openapi: ${router.routes.length} routes -> src/generated/openapi.json`);

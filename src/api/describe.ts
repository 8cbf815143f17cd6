/**
 * The routes of the API without serving them (scripts/write-openapi.ts): every
 * module is registered on a bare router with a context that has configuration
 * but no database or keys. Registering a route must not touch either, nor start
 * anything that would later: any touch fails the description loudly, even one
 * whose error the touching code caught (a job started at registration used to
 * swallow it). Background jobs are declared, never started, here.
 */
import { H3 } from 'h3';
import type { Config } from '../config.ts';
import { VERSION } from '../version.ts';
import { registerRoutes, type RouteModule } from './app.ts';
import type { AppContext } from './context.ts';
import { Router } from './router.ts';

export function describeRoutes(config: Config, extraModules: RouteModule[] = []): Router {
  const touched: string[] = [];
  const unavailable = (what: string) =>
    new Proxy(
      {},
      {
        get: (_t, prop) => {
          touched.push(`${what}.${String(prop)}`);
          throw new Error(`route registration touched ${what}.${String(prop)}`);
        },
      },
    );
  const ctx: AppContext = {
    config,
    ledger: unavailable('ledger') as AppContext['ledger'],
    keyring: unavailable('keyring') as AppContext['keyring'],
    version: VERSION,
    log: () => undefined,
  };
  const router = new Router(new H3());
  registerRoutes(router, ctx, extraModules);
  if (touched.length > 0)
    throw new Error(
      `route registration touched ${[...new Set(touched)].join(', ')}: registering a route must not use the database or the keys`,
    );
  return router;
}

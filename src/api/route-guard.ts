/**
 * What the router runs before a route's handler to enforce what the route
 * declares (router.ts Guard): for `auth: 'key'` the key and the role
 * (auth.ts keyGuard), for `auth: 'demo'` the per-client rate limit
 * (rate-limit.ts), before anything of the request is read.
 */
import type { H3Event } from 'h3';
import { keyGuard } from './auth.ts';
import type { AppContext } from './context.ts';
import { enforceDemoRateLimit } from './rate-limit.ts';
import type { RouteRecord } from './route-doc.ts';

export function routeGuard(ctx: AppContext, route: RouteRecord): ((event: H3Event) => Promise<void>) | undefined {
  if (route.doc?.auth === 'demo') return (event) => enforceDemoRateLimit(event, ctx);
  return keyGuard(ctx, route);
}

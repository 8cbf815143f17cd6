/**
 * CORS for browser-based agents (docs/hardening.md). Every answer outside
 * /mcp carries `Access-Control-Allow-Origin: *`: the API authenticates with a
 * bearer key, never a cookie, so a page on another origin learns nothing it
 * could not fetch itself. OPTIONS is the preflight: 204 naming the path's
 * methods and the request headers the API reads. /mcp keeps its own origin
 * allow-list (DNS rebinding protection): only those origins are echoed there.
 */
import type { H3, H3Event } from 'h3';
import { notFound } from './problem.ts';

export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key, X-Request-Id';
export const CORS_EXPOSE_HEADERS = 'RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, ETag, Location, Allow, Link';
export const CORS_MAX_AGE_SECONDS = 600;
export const MCP_PATH = '/mcp';
const MCP = MCP_PATH;

/** For onRequest: the CORS headers of an ordinary (non-preflight) answer. */
export function applyCors(event: H3Event): void {
  if (event.url.pathname === MCP) return;
  event.res.headers.set('access-control-allow-origin', '*');
  event.res.headers.set('access-control-expose-headers', CORS_EXPOSE_HEADERS);
}

/**
 * Registers the preflight for every path: the methods come from the router and,
 * for files of the built site, GET and HEAD. Unknown paths are 404.
 */
export function registerPreflight(
  h3: H3,
  router: { allowed(path: string): readonly string[] },
  isStatic: (path: string) => boolean,
  mcpOrigins: () => Set<string>,
): void {
  h3.on('OPTIONS', '/**', (event: H3Event) => {
    const path = event.url.pathname;
    const methods = new Set<string>(router.allowed(path));
    if (methods.has('GET') || isStatic(path)) {
      methods.add('GET');
      methods.add('HEAD');
    }
    if (methods.size === 0) throw notFound(`nothing is served at ${path}`, 'route_not_found');
    methods.add('OPTIONS');
    const headers = new Headers({
      allow: [...methods].join(', '),
      'access-control-allow-methods': [...methods].join(', '),
      'access-control-allow-headers': CORS_ALLOW_HEADERS,
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
      vary: 'Origin',
    });
    if (path === MCP) {
      const origin = event.req.headers.get('origin');
      if (origin && mcpOrigins().has(origin)) headers.set('access-control-allow-origin', origin);
      headers.append('access-control-allow-headers', 'Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID');
    } else {
      headers.set('access-control-allow-origin', '*');
    }
    return new Response(null, { status: 204, headers });
  });
}

/**
 * The MCP tool name of an operation: the one its declaration names
 * (RouteDoc.tool), else, for every keyed operation, a name derived from its
 * declaration by one rule, so that no keyed operation is without a tool. The
 * MCP server, the OpenAPI document (`x-mcp-tool`) and the typed client's
 * operation names all read it from here.
 */
import type { RouteRecord } from './route-doc.ts';

/**
 * The rule: the path's words in order, snake_case, leaving out the `api` and
 * version segments (`v1`), the parameters and a `.json` suffix; then `_get`
 * for a GET of one resource (the path ends in a parameter), `_create` for a
 * POST that answers 201. `POST /v1/fuse/heartbeat` -> `fuse_heartbeat`,
 * `GET /v1/keys/:key_id` -> `keys_get`, `POST /v1/alerts` (201) ->
 * `alerts_create`, `GET /v1/alerts` -> `alerts`.
 */
export function derivedToolName(route: RouteRecord): string {
  const segments = route.path.split('/').filter(Boolean);
  const words = segments
    .filter((seg) => seg !== 'api' && !/^v\d+$/.test(seg) && !seg.startsWith(':'))
    .flatMap((seg) => seg.replace(/\.json$/, '').toLowerCase().split(/[^a-z0-9]+/))
    .filter(Boolean);
  const endsInParameter = segments.at(-1)?.startsWith(':') ?? false;
  const creates = route.method === 'POST' && route.doc?.responses?.[201] !== undefined;
  const suffix = route.method === 'GET' && endsInParameter ? ['get'] : creates ? ['create'] : [];
  return [...words, ...suffix].join('_');
}

/** The operation's MCP tool name; undefined for a public or demo operation that declares none. */
export function toolName(route: RouteRecord): string | undefined {
  const doc = route.doc;
  if (!doc) return undefined;
  return doc.tool ?? (doc.auth === 'key' ? derivedToolName(route) : undefined);
}

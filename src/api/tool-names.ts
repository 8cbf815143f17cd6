/**
 * The one name of an operation: the one its declaration names (RouteDoc.tool,
 * else RouteDoc.name), else one derived from its method and path by one rule.
 * It is the OpenAPI operationId, the typed client's operation name, the
 * `operation` of its /.well-known/gate.json entry and, for every keyed
 * operation and every public one that names a tool, its MCP tool name: all
 * read it from here, so that an operation has one name everywhere.
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
export function derivedToolName(route: Operation): string {
  const segments = route.path.split('/').filter(Boolean);
  const words = segments
    .filter((seg) => seg !== 'api' && !/^v\d+$/.test(seg) && !seg.startsWith(':'))
    .flatMap((seg) =>
      seg
        .replace(/\.json$/, '')
        .toLowerCase()
        .split(/[^a-z0-9]+/),
    )
    .filter(Boolean);
  const endsInParameter = segments.at(-1)?.startsWith(':') ?? false;
  const creates = route.method === 'POST' && route.doc?.responses?.[201] !== undefined;
  const suffix = route.method === 'GET' && endsInParameter ? ['get'] : creates ? ['create'] : [];
  return [...words, ...suffix].join('_');
}

type Operation = Pick<RouteRecord, 'method' | 'path' | 'doc'>;

/** The operation's one name (see above). */
export function operationName(route: Operation): string {
  return route.doc?.tool ?? route.doc?.name ?? derivedToolName(route);
}

/** The operation's MCP tool name: its name, for a keyed operation or one that declares a tool; else undefined. */
export function toolName(route: Operation): string | undefined {
  const doc = route.doc;
  if (!doc) return undefined;
  return doc.tool !== undefined || doc.auth === 'key' ? operationName(route) : undefined;
}

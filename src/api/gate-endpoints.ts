/**
 * The endpoint list of /.well-known/gate.json, from the operations'
 * declarations: every gate operation (under /v1/ and /demo/, SPEC 4.1's rows,
 * and the gate's own documents), each with its one name. SPEC 4.1's rows come
 * first, in its order, with its words (src/content/spec-gate-endpoints.json);
 * every other operation is ours (`extension: true`), described by its summary.
 * Written at build time (scripts/write-openapi.ts) to
 * src/generated/gate-endpoints.json, which the discovery document reads.
 */
import specRowsJson from '../content/spec-gate-endpoints.json' with { type: 'json' };
import { gateEndpointsSchema, type GateEndpoint } from '../catalog/schemas.ts';
import { paidRouteOf } from '../payments/x402/resources.ts';
import { openApiPath } from './openapi.ts';
import type { RouteRecord } from './route-doc.ts';
import { operationName } from './tool-names.ts';

const SPEC_ROWS = gateEndpointsSchema.parse(specRowsJson);

/** Gate operations outside /v1/ and /demo/ that are not SPEC rows: the documents an agent reads to use the gate. */
const GATE_DOCUMENTS = new Set(['/crypto/public-key', '/openapi.json']);

const isGateOperation = (path: string, specified: boolean): boolean =>
  specified || path.startsWith('/v1/') || path.startsWith('/demo/') || GATE_DOCUMENTS.has(path);

function authOf(route: RouteRecord): GateEndpoint['auth'] {
  if (route.doc?.auth !== 'key') return 'none';
  return route.paidInPlaceOfKey || paidRouteOf(route.method, route.path, route.doc) ? 'key or x402' : 'key';
}

export function gateEndpoints(routes: readonly RouteRecord[]): GateEndpoint[] {
  const served = new Map<string, RouteRecord>();
  for (const r of routes) if (r.doc) served.set(`${r.method} ${openApiPath(r.path).path}`, r);
  const spec = SPEC_ROWS.map((row) => {
    const route = served.get(`${row.method} ${row.path}`);
    if (!route) throw new Error(`SPEC 4.1 lists ${row.method} ${row.path}, and no operation declares it`);
    return { ...row, operation: operationName(route) };
  });
  const specified = new Set(SPEC_ROWS.map((row) => `${row.method} ${row.path}`));
  const ours = [...served].flatMap(([id, route]) => {
    const path = openApiPath(route.path).path;
    if (specified.has(id) || !isGateOperation(path, false)) return [];
    return [
      { method: route.method, path, auth: authOf(route), purpose: route.doc!.summary, operation: operationName(route), extension: true },
    ];
  });
  return gateEndpointsSchema.parse([...spec, ...ours]);
}

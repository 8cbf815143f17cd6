/**
 * The typed client's operation table, written from the operations'
 * declarations (scripts/write-client.ts -> src/client-operations.ts): each
 * operation's one name (api/tool-names.ts operationName), method,
 * path, auth, whether it takes x402, and the TypeScript type of its input (the
 * path's parameters and the JSON Schema of the zod schema the route parses
 * with). A test regenerates it and compares, so the client cannot drift.
 */
import { paidRouteOf } from '../payments/x402/resources.ts';
import { jsonSchema } from './openapi.ts';
import { pathParams } from './mcp.ts';
import type { RouteRecord } from './router.ts';
import { operationName } from './tool-names.ts';

type Schema = Record<string, unknown>;

const ident = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (k: string) => (ident.test(k) ? k : JSON.stringify(k));

/** The TypeScript type of a JSON Schema (2020-12, as zod writes it), as text. */
export function tsType(s: Schema | boolean | undefined, indent = ''): string {
  if (s === undefined || s === true) return 'unknown';
  if (s === false) return 'never';
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  const union = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
  if (union) return union.map((x) => wrap(tsType(x, indent))).join(' | ');
  if (Array.isArray(s.allOf)) return (s.allOf as Schema[]).map((x) => wrap(tsType(x, indent))).join(' & ');
  if (Array.isArray(s.type)) return (s.type as string[]).map((t) => tsType({ ...s, type: t }, indent)).join(' | ');
  switch (s.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return Array.isArray(s.prefixItems)
        ? `[${(s.prefixItems as Schema[]).map((x) => tsType(x, indent)).join(', ')}]`
        : `Array<${tsType(s.items as Schema | undefined, indent)}>`;
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const required = new Set((s.required ?? []) as string[]);
      const inner = indent + '  ';
      const lines = Object.entries(props).map(([k, v]) => `${inner}${key(k)}${required.has(k) ? '' : '?'}: ${tsType(v, inner)};`);
      const extra = s.additionalProperties;
      if (extra !== undefined && extra !== false) lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : 'unknown'};`);
      return lines.length ? `{\n${lines.join('\n')}\n${indent}}` : extra === false ? 'Record<string, never>' : 'Record<string, unknown>';
    }
    default:
      return 'unknown';
  }
}

const wrap = (t: string) => (/[|&]/.test(t) && !t.startsWith('{') ? `(${t})` : t);

export interface ClientOperation {
  name: string;
  method: string;
  path: string;
  auth: string;
  x402: boolean;
  /** Where the input goes besides the path: the JSON body, the query string, or nowhere. */
  input: 'body' | 'query' | 'none';
  params: string[];
  type: string;
}

/** The operations a client calls: every declared route but the MCP endpoint itself. */
export function clientOperations(routes: readonly RouteRecord[]): ClientOperation[] {
  return routes.flatMap((r) => {
    const doc = r.doc;
    if (!doc || r.path === '/mcp' || r.path.includes('*')) return [];
    const params = pathParams(r.path);
    const own = r.method === 'GET' ? doc.query : doc.body;
    const schema = own ? jsonSchema(own, 'input') : undefined;
    const paramType = params.map((p) => `  ${p}: string;`).join('\n');
    let type: string;
    if (!schema) type = params.length ? `{\n${paramType}\n}` : 'Record<string, never>';
    else if (!params.length) type = tsType(schema);
    else type = `{\n${paramType}\n} & ${wrap(tsType(schema))}`;
    return [
      {
        name: operationName(r),
        method: r.method,
        path: r.path,
        auth: doc.auth === 'key' ? (doc.role === 'operator' ? 'operator' : 'key') : doc.auth,
        x402: paidRouteOf(r.method, r.path, doc) !== undefined,
        input: own ? (r.method === 'GET' ? 'query' : 'body') : 'none',
        params,
        type,
      },
    ];
  });
}

/** The text of src/client-operations.ts. */
export function clientOperationsSource(routes: readonly RouteRecord[]): string {
  const ops = clientOperations(routes);
  const table = ops
    .map(
      (o) =>
        `  ${key(o.name)}: { method: '${o.method}', path: '${o.path}', auth: '${o.auth}', x402: ${o.x402}, input: '${o.input}', params: [${o.params.map((p) => `'${p}'`).join(', ')}] },`,
    )
    .join('\n');
  const inputs = ops.map((o) => `  ${key(o.name)}: ${o.type.replace(/\n/g, '\n  ')};`).join('\n');
  return `/**
 * Every operation of the service, for the typed client (src/client.ts): written
 * by scripts/write-client.ts from the operations' declarations (src/api/client-gen.ts).
 * Do not edit: \`npm run build\` writes it again, and a test checks it is current.
 */

export const OPERATIONS = {
${table}
} as const;

export type OperationName = keyof typeof OPERATIONS;

/** What each operation takes: its path parameters and its JSON body or query. */
export interface OperationInput {
${inputs}
}
`;
}

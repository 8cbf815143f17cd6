/**
 * The API reference's reading of the OpenAPI description (generated from the
 * routes by scripts/write-openapi.ts): its operations grouped by area, and
 * how each is shown. /reference lists every operation and finds one;
 * /reference/<area> shows an area's operations whole (src/pages/reference/).
 */
import openapi from '../generated/openapi.json' with { type: 'json' };
import recorded from '../content/recorded-examples.json' with { type: 'json' };

// The generated description's shape is OpenAPI's, read loosely.
export type Json = Record<string, any>;

export const doc = openapi as Json;
export const server: string = doc.servers[0].url;

export interface Operation {
  method: string;
  path: string;
  op: Json;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
export const operations: Operation[] = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, byMethod]) =>
  METHODS.filter((m) => byMethod[m]).map((m) => ({ method: m.toUpperCase(), path, op: byMethod[m] })),
);

/** The areas (OpenAPI tags), in the description's order, each with its operations. */
export const areas: Array<{ tag: string; ops: Operation[] }> = (doc.tags as Array<{ name: string }>)
  .map((t) => ({ tag: t.name, ops: operations.filter((o) => o.op.tags?.[0] === t.name) }))
  .filter((a) => a.ops.length > 0);

export const areaPath = (tag: string) => `/reference/${tag}`;
export const anchor = (method: string, path: string) =>
  `${method}-${path}`
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
/** Where one operation is read in full. */
export const operationHref = (o: Operation) => `${areaPath(o.op.tags?.[0] ?? 'other')}#${anchor(o.method, o.path)}`;
/** What the search box matches an operation on: method, path, summary and its one name. */
export const searchText = (o: Operation) =>
  `${o.method} ${o.path} ${o.op.summary ?? ''} ${o.op.operationId ?? ''}`.replace(/`/g, '').toLowerCase();

export const keyed = (op: Json) => (op.security ?? []).length > 0;
/** Besides a key: an x402 payment (when the service has x402 configured), at this price. */
export const x402 = (op: Json): string | undefined =>
  op['x-x402'] ? `or an x402 payment of ${op['x-x402'].usd} USD (${op['x-x402'].sku})` : undefined;
export const queryParams = (op: Json) => (op.parameters ?? []).filter((p: Json) => p.in === 'query');
export const bodyOf = (op: Json) => op.requestBody?.content?.['application/json'];
export const statuses = (op: Json) => Object.keys(op.responses ?? {}).join(', ');

export function example(o: Operation): string {
  const { method, path, op } = o;
  const params = queryParams(op).filter((p: Json) => p.required);
  const query = params.length ? '?' + params.map((p: Json) => `${p.name}=<${p.name}>`).join('&') : '';
  const lines = [`curl -X ${method} '${server}${path.replace(/\{(\w+)\}/g, '<$1>')}${query}'`];
  if (keyed(op)) lines.push(`  -H "Authorization: Bearer $KEY"`);
  const body = bodyOf(op);
  if (body) {
    lines.push(`  -H 'content-type: application/json'`);
    lines.push(`  -d '${JSON.stringify(body.example ?? {})}'`);
  }
  return lines.join(' \\\n');
}

/** A field's type, with the values an enum accepts. */
export const typeOf = (p: Json): string =>
  p.enum
    ? `one of ${p.enum.map((v: unknown) => JSON.stringify(v)).join(' | ')}`
    : p.const !== undefined
      ? JSON.stringify(p.const)
      : p.type === 'array' && p.items
        ? `array of ${typeOf(p.items)}`
        : (p.type ?? (p.anyOf ? 'one of several' : 'any'));

/** The body's fields, and one level of an object field's own (`action.kind`). */
export function fields(
  schema: Json | undefined,
  prefix = '',
): Array<{ name: string; type: string; required: boolean; description: string }> {
  if (!schema?.properties) return [];
  const required: string[] = schema.required ?? [];
  return Object.entries(schema.properties as Record<string, Json>).flatMap(([name, p]) => [
    { name: prefix + name, type: typeOf(p), required: required.includes(name), description: p.description ?? '' },
    ...(prefix === '' && p.type === 'object' ? fields(p, `${name}.`) : []),
  ]);
}

/** The small markdown our descriptions use (`code`), as HTML; everything else escaped. */
const escape = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
export const inline = (t: string): string => escape(t).replace(/`([^`]+)`/g, '<code>$1</code>');

/** A real answer recorded from a running service (scripts/record-examples.ts), where one was recorded. */
export const answerOf = (o: Operation) => (recorded as Record<string, { status: number; body: unknown }>)[`${o.method} ${o.path}`];

/**
 * The OpenAPI 3.1.0 description (SPEC 9: version 1.0.0), generated from the
 * routes' own records (src/api/router.ts RouteDoc: the zod schemas the
 * handlers parse with) and from the catalog entries the site builds. Nothing
 * here is written by hand twice: a route without a RouteDoc still appears,
 * with its path and method only, and a test refuses that.
 */
import { z } from 'zod';
import { CATALOGS, type Urls } from '../catalog/catalogs.ts';
import { DISCOVERY_NAMES } from '../catalog/discovery.ts';
import { TOLLS } from '../catalog/tolls.ts';
import { formatUsd, usdToMicros } from '../catalog/money.ts';
import { paidRouteOf, priceListing } from '../payments/x402/resources.ts';
import type { AppContext } from './context.ts';
import { PROBLEM_TYPE_BASE } from './problem.ts';
import { reply } from './reply.ts';
import type { ResponseDoc, RouteDoc, RouteRecord, Router } from './router.ts';
import { operationName, toolName } from './tool-names.ts';
import { operation } from './operation.ts';

export const OPENAPI_VERSION = '3.1.0';
export const API_DESCRIPTION_VERSION = '1.0.0';

type Json = Record<string, unknown>;

/** JSON Schema 2020-12 (OpenAPI 3.1's dialect) of a zod schema, as a request (`input`) or an answer (`output`). */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
  return rest;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad input: malformed JSON, an invalid field (named in `errors`), or an invalid query',
  401: 'Missing, unknown or revoked API key',
  402: 'Payment required: the hop limit exceeded, or an x402 payment needed or refused (requirements in PAYMENT-REQUIRED and the body)',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  409: 'Conflict (state, or an Idempotency-Key still in progress)',
  413: 'Body too large',
  415: 'Body is not application/json',
  422: 'Unprocessable: a rule of the operation refused the request, or an Idempotency-Key reused with another request',
  428: 'Receipt required',
  429: 'Rate limited (RateLimit headers, Retry-After)',
  502: 'Bad gateway (an upstream failed; nothing was charged)',
  503: 'Unavailable (the ledger cannot be reached, or a dependency is not configured)',
  504: 'Gateway timeout (an upstream did not answer in time; nothing was charged)',
};

/** `/v1/receipts/:id` -> `/v1/receipts/{id}` and its parameter names (a rest of the path, `**:tile`, is one parameter too). */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const p = path.replace(/(?:\*\*)?:([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path: p, params };
}

function queryParameters(schema: z.ZodType): Json[] {
  const s = jsonSchema(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, prop]) => ({
    name,
    in: 'query',
    required: (s.required ?? []).includes(name),
    ...(typeof prop.description === 'string' ? { description: prop.description } : {}),
    schema: prop,
  }));
}

/** A response object: its own body schema and content type, or none (a redirect). */
function responseObject(d: ResponseDoc): Json {
  if (!d.schema && !d.contentType) return { description: d.description };
  const schema = d.schema ? jsonSchema(d.schema, 'output') : d.contentType?.startsWith('text/') ? { type: 'string' } : { type: 'object' };
  return { description: d.description, content: { [d.contentType ?? 'application/json']: { schema } } };
}

/** Every status the operation answers: its own responses first, then the shared problems. */
function responsesOf(doc: RouteDoc | undefined, problems: Set<number>): Json {
  const own = doc?.responses ?? {};
  const ownStatuses = Object.keys(own).map(Number);
  const out: Json = {};
  if (!ownStatuses.some((st) => st >= 200 && st < 300)) {
    out['200'] = {
      description: 'The answer (decisions such as DENY, BLOCK or HALT are answers, not errors)',
      content: { 'application/json': { schema: doc?.response ? jsonSchema(doc.response, 'output') : { type: 'object' } } },
    };
  }
  for (const st of ownStatuses.sort((a, b) => a - b)) {
    const r = responseObject(own[st]!);
    // The same status may also come as a problem (a 403 decision body, or a 403 problem for another reason).
    if (problems.has(st) && r.content) {
      (r.content as Json)['application/problem+json'] = { schema: { $ref: '#/components/schemas/Problem' } };
      r.description = `${String(r.description)}; or a problem: ${STATUS_TEXT[st] ?? ''}`;
    }
    out[String(st)] = r;
  }
  for (const st of [...problems].sort((a, b) => a - b))
    if (!(String(st) in out)) out[String(st)] = { $ref: `#/components/responses/P${st}` };
  return out;
}

function operationObject(r: RouteRecord): Json {
  const doc = r.doc;
  const { params } = openApiPath(r.path);
  const statuses = new Set<number>(doc?.problems ?? []);
  if (doc?.body) [400, 413, 415].forEach((s) => statuses.add(s));
  if (doc?.query || params.length) statuses.add(400);
  // A path parameter names a resource that may not exist (or be empty: no route).
  if (params.length) statuses.add(404);
  if (doc?.auth === 'key') statuses.add(401);
  if (doc?.auth === 'key' && doc.role === 'operator') statuses.add(403);
  if (doc?.auth === 'demo') statuses.add(429);
  // A SKU without a fixed toll (a bps fee, a catalog-specific toll) is named without a price.
  // Written as the pricing page writes amounts: two decimals, then USD.
  const price = (sku: string) => {
    const t = TOLLS.find((x) => x.sku === sku);
    return t && formatUsd(usdToMicros(t.usd));
  };
  const paid = paidRouteOf(r.method, r.path, doc);
  const tool = toolName(r);
  if (paid) statuses.add(402);
  const charges = doc?.charges?.map((sku) => (price(sku) === undefined ? `\`${sku}\`` : `\`${sku}\` ${price(sku)} USD`)).join(', ');
  const description = [
    doc?.description,
    doc?.auth === 'demo' ? 'Public demo: no key, rate limited per client address.' : undefined,
    doc?.auth === 'key'
      ? doc.role === 'operator'
        ? 'Needs an operator key (an agent key gets 403 `operator_key_required`).'
        : 'Any key: agent or operator.'
      : undefined,
    charges ? `Charges: ${charges}. Accepts \`Idempotency-Key\`.` : undefined,
  ]
    .filter(Boolean)
    .join(' ');
  return {
    operationId: operationName(r),
    summary: doc?.summary ?? `${r.method} ${r.path}`,
    ...(description ? { description } : {}),
    tags: [doc?.tag ?? 'other'],
    // A key, or (where the operation takes one) an x402 payment instead: the alternatives of OpenAPI's security list.
    security: doc?.auth === 'key' ? [{ bearer: [] }, ...(paid ? [{ x402: [] }] : [])] : [],
    ...(doc?.auth === 'key' ? { 'x-key-role': doc.role ?? 'agent' } : {}),
    ...(tool ? { 'x-mcp-tool': tool } : {}),
    ...(paid ? { 'x-x402': priceListing(paid) } : {}),
    parameters: [
      ...params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
      ...(doc?.query ? queryParameters(doc.query) : []),
      ...(doc?.charges?.length ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
    ],
    ...(doc?.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: jsonSchema(doc.body, 'input'),
                ...(doc.example !== undefined ? { example: doc.example } : {}),
              },
            },
          },
        }
      : {}),
    responses: responsesOf(doc, statuses),
  };
}

/** The whole description: every documented route of the running app, and the site's static documents. */
export function buildOpenApi(routes: readonly RouteRecord[], urls: Urls): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const add = (path: string, method: string, op: Json) => {
    (paths[path] ??= {})[method.toLowerCase()] = op;
  };
  for (const r of routes) add(openApiPath(r.path).path, r.method, operationObject(r));
  for (const c of CATALOGS) {
    if (paths[c.path]?.get) continue;
    add(c.path, 'GET', {
      operationId: operationName({ method: 'GET', path: c.path, doc: undefined }),
      summary: `Catalog ${c.key} (schema ${c.schemaId})`,
      tags: ['catalogs'],
      security: [],
      responses: { '200': { description: 'The catalog', content: { 'application/json': { schema: jsonSchema(c.schema, 'output') } } } },
    });
  }
  for (const name of DISCOVERY_NAMES) {
    const path = `/.well-known/${name}.json`;
    if (paths[path]?.get) continue;
    add(path, 'GET', {
      operationId: operationName({ method: 'GET', path, doc: undefined }),
      summary: `Discovery document ${name}`,
      tags: ['discovery'],
      security: [],
      responses: { '200': { description: 'The document', content: { 'application/json': { schema: { type: 'object' } } } } },
    });
  }
  const problem = {
    type: 'object',
    required: ['type', 'title', 'status', 'code'],
    properties: {
      type: { type: 'string', description: `${PROBLEM_TYPE_BASE}<code>` },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      instance: { type: 'string' },
      code: { type: 'string', description: 'stable machine-readable code' },
      errors: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
    },
  };
  const statuses = Object.keys(STATUS_TEXT).map(Number);
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Fuse Gate',
      version: API_DESCRIPTION_VERSION,
      description:
        'A metered pre-execution gate for software agents, and its companion catalog site. Gate operations live under /v1, companion-site operations under /api/v1. Errors are RFC 9457 problem+json.',
    },
    servers: [
      { url: urls.gate, description: 'gate service (BASE_URL)' },
      ...(urls.site !== urls.gate ? [{ url: urls.site, description: 'companion site (SITE_URL)' }] : []),
    ],
    tags: [...new Set(Object.values(paths).flatMap((ops) => Object.values(ops).flatMap((o) => o.tags as string[])))].map((name) => ({
      name,
    })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' },
        x402: {
          type: 'apiKey',
          in: 'header',
          name: 'PAYMENT-SIGNATURE',
          description:
            'An x402 payment instead of a key, when the service has x402 configured (x402_configured in /.well-known/x402.json): a call without either answers 402 with the requirements (PAYMENT-REQUIRED); X-PAYMENT for x402 v1 clients. See docs/x402.md.',
        },
      },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Retry safely: the same key and request answer once and charge once; another request with the key is 422; a retry while the first runs is 409.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      schemas: { Problem: problem },
      responses: Object.fromEntries(
        statuses.map((s) => [
          `P${s}`,
          { description: STATUS_TEXT[s], content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
        ]),
      ),
    },
  };
}

/** GET /openapi.json: the description of this very process's routes (built once, on first request). */
export function registerOpenApiRoutes(router: Router, ctx: AppContext): void {
  let cached: Json | undefined;
  operation(
    router,
    ctx,
    { method: 'GET', path: '/openapi.json', summary: 'This OpenAPI 3.1.0 description', auth: 'public', tag: 'discovery' },
    () => {
      cached ??= buildOpenApi(router.routes, { gate: ctx.config.BASE_URL, site: ctx.config.SITE_URL });
      return reply(cached, 200, { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' });
    },
  );
}

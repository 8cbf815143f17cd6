/**
 * POST /mcp: a Streamable HTTP MCP server (official SDK, stateless, JSON
 * answers) whose tools ARE the HTTP operations. A tool call is dispatched to
 * the same h3 route in-process, with the caller's Authorization header, so it
 * is validated, limited, charged, idempotent and receipted exactly as over
 * HTTP; a tool's input schema is the zod schema that route parses with.
 *
 * Without a key the server offers the public and demo tools; with
 * `Authorization: Bearer <key>` the keyed ones too. A refusal (DENY, NO_GO,
 * HALT...) is an ordinary tool result; a problem (4xx/5xx problem+json) is a
 * tool result with `isError: true`. Never a protocol crash.
 *
 * Transport rules of revision 2025-11-25 enforced here or by the SDK: POST
 * only (GET/DELETE are 405: we offer no server-initiated stream and no
 * session, so every process can answer any request), `Accept` must list
 * application/json and text/event-stream (406), `MCP-Protocol-Version` must
 * be supported (400), and a present `Origin` must be one of ours (403).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { H3, H3Event } from 'h3';
import { z } from 'zod';
import { discoveryDocument } from '../catalog/discovery.ts';
import type { KeyRole } from '../ledger/api-keys.ts';
import { optionalKey } from './auth.ts';
import { readStreamWithin } from './body.ts';
import type { AppContext } from './context.ts';
import { jsonBoundsProblem } from './json-bounds.ts';
import { Problem } from './problem.ts';
import { clientAddress } from './rate-limit.ts';
import { reply, toResponse } from './reply.ts';
import type { RouteRecord, Router } from './router.ts';

export const MCP_PATH = '/mcp';

/** The operations offered as tools: name -> route. A route not registered (yet) offers no tool. */
export const MCP_TOOLS: ReadonlyArray<{ name: string; method: 'GET' | 'POST'; path: string }> = [
  { name: 'fuse_hop', method: 'POST', path: '/v1/fuse/hop' },
  { name: 'fuse_lookup', method: 'GET', path: '/v1/fuse/lookup' },
  { name: 'act', method: 'POST', path: '/v1/act' },
  { name: 'classify', method: 'POST', path: '/v1/classify' },
  { name: 'execute_gate', method: 'POST', path: '/api/v1/execute-gate' },
  { name: 'execute_gate_demo', method: 'POST', path: '/v1/execute-gate/demo' },
  { name: 'pas_bind_check', method: 'POST', path: '/v1/pas/bind-check' },
  { name: 'prefinality_evaluate', method: 'POST', path: '/v1/prefinality/evaluate' },
  { name: 'prefinality_verify', method: 'POST', path: '/v1/prefinality/verify' },
  { name: 'receipt_verify', method: 'POST', path: '/v1/receipts/verify' },
  { name: 'astl_publish', method: 'POST', path: '/api/v1/astl/publish' },
  { name: 'astl_lookup', method: 'GET', path: '/api/v1/astl/lookup' },
  { name: 'absence_witness', method: 'POST', path: '/api/v1/absence/witness' },
  { name: 'absence_verify', method: 'POST', path: '/standards/absence-ledger/verify' },
  { name: 'trigger_publish', method: 'POST', path: '/signal/trigger/publish' },
  { name: 'oracle_aggregate', method: 'POST', path: '/api/v1/oracle/aggregate' },
  { name: 'conformity_generate', method: 'POST', path: '/api/v1/conformity/generate' },
  { name: 'foundry_pipeline_run', method: 'POST', path: '/api/v1/foundry/pipeline/run' },
  { name: 'demo_hop', method: 'POST', path: '/demo/hop' },
  { name: 'demo_act', method: 'POST', path: '/demo/act' },
  { name: 'demo_lookup', method: 'GET', path: '/demo/lookup' },
  { name: 'demo_prefinality_evaluate', method: 'POST', path: '/demo/prefinality/evaluate' },
  { name: 'demo_pas_bind_check', method: 'POST', path: '/demo/pas/bind-check' },
  { name: 'keys_list', method: 'GET', path: '/v1/keys' },
  { name: 'keys_create', method: 'POST', path: '/v1/keys' },
];

export interface McpTool {
  name: string;
  route: RouteRecord;
  description: string;
  keyed: boolean;
  /** Offered only to operator keys (the route's RouteDoc.role). */
  operator: boolean;
  input: z.ZodType;
}

/** The tools the registered routes make available, in MCP_TOOLS order. */
export function mcpTools(router: Router): McpTool[] {
  return MCP_TOOLS.flatMap((t) => {
    const route = router.routes.find((r) => r.method === t.method && r.path === t.path);
    if (!route?.doc) return [];
    const doc = route.doc;
    const input = (t.method === 'GET' ? doc.query : doc.body) ?? z.object({});
    const description = `${doc.summary} (${t.method} ${t.path}${doc.auth === 'key' ? (doc.role === 'operator' ? ', needs an operator key' : ', needs an API key (agent or operator)') : doc.auth === 'demo' ? ', public demo, rate limited' : ', public'}${doc.charges?.length ? `; charges ${doc.charges.join(', ')}` : ''})`;
    return [{ name: t.name, route, description, keyed: doc.auth === 'key', operator: doc.auth === 'key' && doc.role === 'operator', input }];
  });
}

export function allowedOrigins(ctx: AppContext): Set<string> {
  const origins = [ctx.config.BASE_URL, ctx.config.SITE_URL, ...ctx.config.MCP_ALLOWED_ORIGINS];
  return new Set(origins.map((u) => new URL(u).origin));
}

function checkOrigin(event: H3Event, allowed: Set<string>): void {
  const origin = event.req.headers.get('origin');
  if (origin === null || allowed.has(origin)) return;
  throw new Problem({
    status: 403,
    code: 'origin_not_allowed',
    title: 'Forbidden',
    detail: `requests from origin ${origin} are refused (DNS rebinding protection); allowed: ${[...allowed].join(', ')}`,
  });
}

/** Calls an HTTP operation of this app in-process, as the MCP client would over HTTP. */
async function dispatch(app: H3, event: H3Event, route: RouteRecord, args: Record<string, unknown>, trustedHops: number) {
  const url = new URL(route.path, event.url.origin);
  const headers = new Headers({ accept: 'application/json' });
  const auth = event.req.headers.get('authorization');
  if (auth) headers.set('authorization', auth);
  let body: string | undefined;
  if (route.method === 'GET') {
    for (const [k, v] of Object.entries(args)) if (v !== undefined) url.searchParams.set(k, String(v));
  } else {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(args);
  }
  const request = new Request(url, { method: route.method, headers, ...(body !== undefined ? { body } : {}) });
  // The demo rate limit counts the MCP client's own address, not the loopback.
  Object.defineProperty(request, 'ip', { value: clientAddress(event, trustedHops) });
  const res = await app.fetch(request);
  const text = await res.text();
  const isProblem = (res.headers.get('content-type') ?? '').startsWith('application/problem+json');
  let structured: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) structured = { status: res.status, ...(parsed as object) };
  } catch {
    /* not JSON: text only */
  }
  return {
    content: [{ type: 'text' as const, text }],
    ...(structured ? { structuredContent: structured } : {}),
    ...(isProblem ? { isError: true } : {}),
  };
}

/**
 * The JSON-RPC body within the same bounds as every route's (depth, number
 * range), checked on a copy before the SDK parses it: tool arguments go on
 * through recursive code (zod, JSON.stringify) that a deep value would overflow.
 * Malformed JSON is left to the SDK, which answers it in JSON-RPC terms.
 */
async function checkMcpBody(event: H3Event, limit: number): Promise<void> {
  const stream = event.req.clone().body;
  if (!stream) return;
  const bytes = await readStreamWithin(stream, limit);
  if (!bytes) return; // the transport refuses it by size
  const text = Buffer.from(bytes).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return;
  }
  const outOfBounds = jsonBoundsProblem(value);
  if (outOfBounds) throw outOfBounds;
}

function buildServer(ctx: AppContext, router: Router, event: H3Event, role: KeyRole | undefined): McpServer {
  const server = new McpServer({ name: 'fusegate', version: ctx.version });
  for (const tool of mcpTools(router)) {
    if ((tool.keyed && !role) || (tool.operator && role !== 'operator')) continue;
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.input }, (args: unknown) =>
      dispatch(router.app, event, tool.route, (args ?? {}) as Record<string, unknown>, ctx.config.TRUST_PROXY_HOPS),
    );
  }
  return server;
}

export function registerMcpRoutes(router: Router, ctx: AppContext): void {
  const origins = allowedOrigins(ctx);

  router.post(
    MCP_PATH,
    async (event) => {
      checkOrigin(event, origins);
      await checkMcpBody(event, ctx.config.MAX_BODY_BYTES);
      const key = await optionalKey(event, ctx);
      const server = buildServer(ctx, router, event, key?.role);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
        maxRequestBodySize: ctx.config.MAX_BODY_BYTES,
      });
      await server.connect(transport);
      try {
        return await transport.handleRequest(event.req as Request);
      } finally {
        void server.close();
      }
    },
    { summary: 'Streamable HTTP MCP endpoint (JSON-RPC 2.0 over POST)', auth: 'public', tag: 'mcp', problems: [403, 406] },
  );

  router.get(
    '/.well-known/mcp.json',
    () => {
      const tools = mcpTools(router);
      return toResponse(
        reply(
          {
            ...discoveryDocument('mcp', { gate: ctx.config.BASE_URL, site: ctx.config.SITE_URL }),
            endpoint: ctx.config.BASE_URL + MCP_PATH,
            protocol_version: LATEST_PROTOCOL_VERSION,
            sessions: false,
            keyed_tools_need: 'Authorization: Bearer <API_KEY> on the POST /mcp request',
            tools: tools.map((t) => ({ name: t.name, description: t.description, auth: t.route.doc!.auth, ...(t.route.doc!.auth === 'key' ? { role: t.route.doc!.role ?? 'agent' } : {}), method: t.route.method, path: t.route.path })),
          },
          200,
          { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' },
        ),
      );
    },
    { summary: 'MCP tool discovery: the endpoint, protocol revision and every tool', auth: 'public', tag: 'discovery' },
  );
}

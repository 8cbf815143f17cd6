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
 * tool result with `isError: true`. Arguments the tool's schema refuses, or an
 * unknown tool, are a JSON-RPC error -32602 (invalid params). Never a crash.
 * The tools are every keyed operation and every other whose declaration names
 * one, by the names of tool-names.ts; the role a declaration asks is asked here.
 *
 * Transport rules of revision 2025-11-25 enforced here or by the SDK: POST
 * only (GET/DELETE are 405: we offer no server-initiated stream and no
 * session, so every process can answer any request), `Accept` must list
 * application/json and text/event-stream (406), `MCP-Protocol-Version` must
 * be supported (400), and a present `Origin` must be one of ours (403).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError,
  isJSONRPCRequest,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { H3, H3Event } from 'h3';
import { z } from 'zod';
import { discoveryDocument } from '../catalog/discovery.ts';
import type { KeyRole } from '../ledger/api-keys.ts';
import { optionalKey } from './auth.ts';
import { readRawBody } from './body.ts';
import type { AppContext } from './context.ts';
import { jsonBoundsProblem } from './json-bounds.ts';
import { Problem } from './problem.ts';
import { clientAddress } from './rate-limit.ts';
import { reply } from './reply.ts';
import type { RouteRecord, Router } from './router.ts';
import { toolName } from './tool-names.ts';
import { operation } from './operation.ts';

export const MCP_PATH = '/mcp';

export interface McpTool {
  name: string;
  route: RouteRecord;
  description: string;
  keyed: boolean;
  /** Offered only to operator keys (the route's RouteDoc.role). */
  operator: boolean;
  input: z.ZodType;
}

/** The names of a path's parameters (`/v1/pas/licenses/:license_id` -> license_id). */
export const pathParams = (path: string): string[] => [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);

/**
 * A tool's input: the path's parameters and the body (or query) the route
 * parses, one object. A body that is not an object schema stays as it is
 * (its route has no path parameter).
 */
function toolInput(route: RouteRecord): z.ZodType {
  const doc = route.doc!;
  const own = (route.method === 'GET' ? doc.query : doc.body) ?? z.object({});
  const params = pathParams(route.path);
  if (params.length === 0) return own;
  const shape = Object.fromEntries(
    params.map((p) => [
      p,
      z
        .string()
        .min(1)
        .max(200)
        .describe(`the ${p.replace(/_/g, ' ')} (path parameter)`),
    ]),
  );
  if (own instanceof z.ZodObject) return own.extend(shape);
  throw new Error(`${route.method} ${route.path}: a tool with path parameters needs an object body`);
}

/** The operations offered as tools: every keyed one, and every other that names a tool (tool-names.ts), in the order they were declared. */
export function mcpTools(router: Router): McpTool[] {
  return router.routes.flatMap((route) => {
    const doc = route.doc;
    const name = toolName(route);
    if (!doc || !name) return [];
    const who =
      doc.auth === 'key'
        ? doc.role === 'operator'
          ? ', needs an operator key'
          : ', needs an API key (agent or operator)'
        : doc.auth === 'demo'
          ? ', public demo, rate limited'
          : ', public';
    const description = `${doc.summary} (${route.method} ${route.path}${who}${doc.charges?.length ? `; charges ${doc.charges.join(', ')}` : ''})${doc.description ? ` ${doc.description}` : ''}`;
    return [
      {
        name,
        route,
        description,
        keyed: doc.auth === 'key',
        operator: doc.auth === 'key' && doc.role === 'operator',
        input: toolInput(route),
      },
    ];
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
  const rest = { ...args };
  const path = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v));
  });
  args = rest;
  const url = new URL(path, event.url.origin);
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
 * The JSON-RPC request with its body read once, here, within MAX_BODY_BYTES
 * (413 problem past it, see bodyTooLarge) and the same bounds as every route's
 * (depth, number range): tool arguments go on through recursive code (zod,
 * JSON.stringify) that a deep value would overflow. The transport gets the
 * bytes in memory, never the socket. Malformed JSON is left to the SDK, which
 * answers it in JSON-RPC terms.
 */
async function boundedMcpRequest(event: H3Event, limit: number): Promise<Request> {
  const text = Buffer.from(await readRawBody(event, limit)).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const outOfBounds = value === undefined ? undefined : jsonBoundsProblem(value);
  if (outOfBounds) throw outOfBounds;
  return new Request(event.req.url, { method: event.req.method, headers: event.req.headers, body: text });
}

/** Why a tools/call is refused when its tool is not offered to this request: unknown, or offered to another key. */
function notOffered(name: string, tools: readonly McpTool[], role: KeyRole | undefined): McpError {
  const tool = tools.find((t) => t.name === name);
  if (!tool) return new McpError(ErrorCode.InvalidParams, `unknown tool ${name}: tools/list names the tools offered to this request`);
  if (!role) {
    return new McpError(
      ErrorCode.InvalidParams,
      `tool ${name} needs an API key: send "Authorization: Bearer <key>" on the POST /mcp request`,
      { code: 'missing_key' },
    );
  }
  return new McpError(
    ErrorCode.InvalidParams,
    `tool ${name} needs an operator key, and this request's key is an agent key (agent keys act and may blow a fuse, never manage)`,
    {
      code: 'operator_key_required',
      key_role: role,
      required_role: 'operator',
    },
  );
}

function buildServer(ctx: AppContext, router: Router, tools: readonly McpTool[], event: H3Event, role: KeyRole | undefined): McpServer {
  const server = new McpServer({ name: 'fusegate', version: ctx.version });
  const offered = new Map<string, McpTool>();
  for (const tool of tools) {
    // The role rule of the operation's declaration, as over HTTP (auth.ts keyGuard answers the same call 401 or 403).
    if ((tool.keyed && !role) || (tool.operator && role !== 'operator')) continue;
    offered.set(tool.name, tool);
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.input }, (args: unknown) =>
      dispatch(router.app, event, tool.route, (args ?? {}) as Record<string, unknown>, ctx.config.TRUST_PROXY_HOPS),
    );
  }
  // tools/call answers a JSON-RPC error -32602 (invalid params) for an unknown tool or arguments its
  // schema refuses, as the MCP specification says; the SDK's own handler would wrap those in a tool
  // result. Valid arguments go to the route as sent: the route parses them with the same schema.
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = offered.get(request.params.name);
    if (!tool) throw notOffered(request.params.name, tools, role);
    const args = request.params.arguments ?? {};
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) {
      const errors = parsed.error.issues.map((i) => ({ field: i.path.join('.') || '(arguments)', message: i.message }));
      throw new McpError(
        ErrorCode.InvalidParams,
        `invalid arguments for ${tool.name}: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`,
        { errors },
      );
    }
    return dispatch(router.app, event, tool.route, args, ctx.config.TRUST_PROXY_HOPS);
  });
  return server;
}

const kindOf = (v: unknown): string =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;

/** What is wrong with a tools/call's params before any tool is looked up, or undefined when its shape is right. */
function toolCallParamsProblem(params: unknown): string | undefined {
  if (params === null || typeof params !== 'object' || Array.isArray(params))
    return `params must be an object with the tool's "name" and its "arguments", not ${kindOf(params)}`;
  const { name, arguments: args } = params as Record<string, unknown>;
  if (typeof name !== 'string') return `params.name must be the tool's name (a string), not ${kindOf(name)}`;
  if (args !== undefined && kindOf(args) !== 'an object')
    return `params.arguments must be an object of the tool's arguments (or left out), not ${kindOf(args)}`;
  return undefined;
}

/**
 * Answers a tools/call whose params have the wrong shape (`arguments` null, an
 * array or a string...) with -32602 naming the problem, before the SDK parses
 * it: the SDK would answer -32603 (internal error) with its schema's error dump.
 */
function refuseMalformedToolCalls(transport: Transport): void {
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    const problem = isJSONRPCRequest(message) && message.method === 'tools/call' ? toolCallParamsProblem(message.params) : undefined;
    if (problem === undefined) deliver?.(message, extra);
    else
      void transport.send({
        jsonrpc: '2.0',
        id: (message as JSONRPCRequest).id,
        error: { code: ErrorCode.InvalidParams, message: problem },
      });
  };
}

export function registerMcpRoutes(router: Router, ctx: AppContext): void {
  const origins = allowedOrigins(ctx);
  // Read once, on the first request: by then every module has declared its routes.
  let declared: McpTool[] | undefined;
  const tools = () => (declared ??= mcpTools(router));

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: MCP_PATH,
      summary: 'Streamable HTTP MCP endpoint (JSON-RPC 2.0 over POST)',
      auth: 'public',
      tag: 'mcp',
      problems: [403, 406],
    },
    async ({ event }) => {
      checkOrigin(event, origins);
      const request = await boundedMcpRequest(event, ctx.config.MAX_BODY_BYTES);
      const key = await optionalKey(event, ctx);
      const server = buildServer(ctx, router, tools(), event, key?.role);
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      refuseMalformedToolCalls(transport);
      try {
        return await transport.handleRequest(request);
      } finally {
        void server.close();
      }
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/mcp.json',
      summary: 'MCP tool discovery: the endpoint, protocol revision and every tool',
      auth: 'public',
      tag: 'discovery',
    },
    () => {
      return reply(
        {
          ...discoveryDocument('mcp', { gate: ctx.config.BASE_URL, site: ctx.config.SITE_URL }),
          endpoint: ctx.config.BASE_URL + MCP_PATH,
          protocol_version: LATEST_PROTOCOL_VERSION,
          sessions: false,
          keyed_tools_need: 'Authorization: Bearer <API_KEY> on the POST /mcp request',
          tools: tools().map((t) => ({
            name: t.name,
            description: t.description,
            auth: t.route.doc!.auth,
            ...(t.route.doc!.auth === 'key' ? { role: t.route.doc!.role ?? 'agent' } : {}),
            method: t.route.method,
            path: t.route.path,
          })),
        },
        200,
        { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=300' },
      );
    },
  );
}

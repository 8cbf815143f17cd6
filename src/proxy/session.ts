/**
 * One MCP session through the gating proxy: the agent's client on one side (a
 * server transport: stdio, or one streamable HTTP session), the upstream
 * server on the other (a client transport), the official SDK on both.
 *
 * The upstream is connected with the client's own `initialize` (its info and
 * capabilities, so the upstream offers what it would offer the client
 * directly), and the server the client talks to answers with the upstream's
 * info, capabilities and instructions. From then on every message passes
 * through as it is, both ways: requests, their results and errors,
 * notifications, progress (under the token its sender chose) and
 * cancellation, the server's own requests to the client (sampling...); except
 * `tools/call`, which is forwarded only once the gate clears it
 * (./tool-gate.ts), its result then carrying the receipt in
 * `_meta["fusegate/gate"]`. A refused call never reaches the upstream: the
 * client gets a tool error naming the decision, the reason and the receipt.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  InitializeRequestSchema,
  isJSONRPCRequest,
  McpError,
  ProgressNotificationSchema,
  ResultSchema,
  SetLevelRequestSchema,
  type JSONRPCMessage,
  type RequestId,
  type Result,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { refusalText, verdictMeta, type GateVerdict } from '../guard/gate-check.ts';
import { HeldTransport } from './held-transport.ts';

/** The `_meta` key of a gated call's verdict, on its result or its refusal. */
export const GATE_META_KEY = 'fusegate/gate';

/**
 * The schema a relayed request's result is read with: as the transport parsed it. Every transport of
 * the SDK has already checked each message it reads as JSON-RPC (a result: an object, its `_meta` an
 * object), and the proxy passes the result on unchanged; checking it again against a tool's own
 * result schema (as the SDK's callTool does) would refuse what the client is to judge.
 */
const AS_PARSED = z.custom<Result>() as unknown as typeof ResultSchema;

/** Requests are never timed out here: the client has its own timeout, and cancels (which passes through). setTimeout's largest delay. */
const NO_TIMEOUT = 2_147_483_647;

export interface SessionOptions {
  /** A new transport to the upstream server, for this session. */
  upstream: () => Transport;
  /** The verdict on one tools/call (ToolGate.check). */
  check: (tool: string, args: Record<string, unknown>, description: string | undefined) => Promise<GateVerdict>;
  /** One line of the proxy's log (stderr: stdout may carry the protocol). */
  log: (line: string) => void;
}

/** A request or notification as a handler receives it (the JSON-RPC envelope, if any, is dropped when it is sent on). */
interface Message {
  method: string;
  params?: { [key: string]: unknown; _meta?: { [key: string]: unknown; progressToken?: string | number } } | undefined;
}

/** Either side, as the proxy sends to it: any request, its result taken as it comes. */
interface Peer {
  request(request: Message, schema: typeof ResultSchema, options?: RequestOptions): Promise<Result>;
  notification(notification: Message, options?: { relatedRequestId?: RequestId }): Promise<void>;
}

/** What a request handler gets that the proxy uses: the request's id, and its cancellation. */
interface HandlerExtra {
  requestId: RequestId;
  signal: AbortSignal;
}

/** The error as the other side answered it: an upstream JSON-RPC error goes back with its code, message and data unchanged. */
function passThrough(e: unknown): Error {
  if (e instanceof McpError) {
    const prefix = `MCP error ${e.code}: `;
    return Object.assign(new Error(e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message), {
      code: e.code,
      data: e.data,
    });
  }
  return new McpError(ErrorCode.InternalError, `the proxy could not forward the request: ${(e as Error).message}`);
}

/**
 * Sends `request` on to `to` as it is (its progress token included: progress
 * passes through under the token its sender chose), cancelled when the
 * handler's signal is.
 */
async function relay(to: Peer, request: Message, extra: HandlerExtra): Promise<Result> {
  try {
    return await to.request({ method: request.method, ...(request.params !== undefined ? { params: request.params } : {}) }, AS_PARSED, {
      signal: extra.signal,
      timeout: NO_TIMEOUT,
    });
  } catch (e) {
    throw passThrough(e);
  }
}

/**
 * Serves one session on `downstream` until either side closes; resolves then.
 * A session whose upstream cannot be connected answers the client's
 * `initialize` with an error naming why, and ends.
 */
export async function serveSession(downstream: Transport, opts: SessionOptions): Promise<void> {
  const held = new HeldTransport(downstream);
  const first = await held.firstMessage();
  const init = InitializeRequestSchema.safeParse(first);
  const params = init.success ? init.data.params : undefined;

  const upstream = new Client(params?.clientInfo ?? { name: 'fusegate-proxy', version: '1' }, { capabilities: params?.capabilities ?? {} });
  try {
    await upstream.connect(opts.upstream());
  } catch (e) {
    const why = `fusegate proxy: the upstream MCP server could not be reached: ${(e as Error).message}`;
    opts.log(why);
    if ('id' in first)
      await held
        .send({ jsonrpc: '2.0', id: first.id, error: { code: ErrorCode.InternalError, message: why } } as JSONRPCMessage)
        .catch(() => undefined);
    await held.close().catch(() => undefined);
    return;
  }

  const capabilities = upstream.getServerCapabilities() ?? {};
  const instructions = upstream.getInstructions();
  const server = new Server(upstream.getServerVersion() ?? { name: 'upstream', version: '0' }, {
    capabilities,
    ...(instructions ? { instructions } : {}),
  });
  const descriptions = new Map<string, string | undefined>();

  // The SDK types each side's messages by its own schemas; the proxy passes any message of either as it is.
  const toUpstream = upstream as unknown as Peer;
  const toClient = server as unknown as Peer;
  const extraOf = (extra: unknown) => extra as HandlerExtra;

  // A tools/call is put to the gate as soon as the transport has read it, before the SDK dispatches it,
  // so that the hop's round trip overlaps the dispatch; its handler then takes that verdict, found by the
  // message itself. A call that asks for a task is left to its handler: the SDK may refuse it first.
  const asked = new WeakMap<object, Promise<GateVerdict>>();
  const ask = (request: Message) => {
    const name = String(request.params?.name ?? '');
    return opts.check(name, (request.params?.arguments ?? {}) as Record<string, unknown>, descriptions.get(name));
  };
  held.tap = (message) => {
    if (isJSONRPCRequest(message) && message.method === 'tools/call' && message.params?.task === undefined)
      asked.set(message, ask(message));
  };

  const callTool = async (request: Message, extra: HandlerExtra): Promise<Result> => {
    const name = String(request.params?.name ?? '');
    const verdict = await (asked.get(request) ?? ask(request));
    const meta = { [GATE_META_KEY]: verdictMeta(verdict) };
    if (verdict.action !== 'run') {
      opts.log(
        `fusegate proxy: ${verdict.action === 'hold' ? 'held' : 'refused'} ${name}: ${verdict.decision ?? 'fail closed'}: ${verdict.reason}${verdict.receipt_id ? ` (receipt ${verdict.receipt_id})` : ''}`,
      );
      // A call that asked for a task expects a task, not a tool result: its refusal is an error.
      if (request.params?.task !== undefined)
        throw Object.assign(new Error(refusalText(verdict)), { code: ErrorCode.InvalidRequest, data: meta });
      return { content: [{ type: 'text', text: refusalText(verdict) }], isError: true, _meta: meta };
    }
    const result = await relay(toUpstream, request, extra);
    return { ...result, _meta: { ...result._meta, ...meta } };
  };

  // The client's requests in flight by their progress token: the upstream's progress on one goes to the client
  // on that request's stream (streamable HTTP), as the upstream sent it on its own.
  const inFlight = new Map<string | number, RequestId>();
  const fromClient = async (request: Message, extra: HandlerExtra): Promise<Result> => {
    const token = request.params?._meta?.progressToken;
    if (token !== undefined) inFlight.set(token, extra.requestId);
    try {
      return request.method === 'tools/call' ? await callTool(request, extra) : await relay(toUpstream, request, extra);
    } finally {
      if (token !== undefined) inFlight.delete(token);
    }
  };
  const notify = (to: Peer, n: Message, options?: { relatedRequestId?: RequestId }) =>
    to
      .notification(n, options)
      .catch((e: Error) =>
        opts.log(`fusegate proxy: a notification to the ${to === toUpstream ? 'upstream' : 'client'} failed: ${e.message}`),
      );

  server.fallbackRequestHandler = async (request, extra) => {
    const result = await fromClient(request, extraOf(extra));
    // The descriptions the classifier reads for tools the kinds file does not name.
    if (request.method === 'tools/list' && Array.isArray(result.tools)) {
      for (const t of result.tools as Array<{ name?: unknown; description?: unknown }>) {
        if (typeof t.name === 'string') descriptions.set(t.name, typeof t.description === 'string' ? t.description : undefined);
      }
    }
    return result;
  };
  // The SDK's server answers logging/setLevel itself when the server logs: the upstream must hear it instead.
  if (capabilities.logging)
    server.setRequestHandler(
      SetLevelRequestSchema,
      async (request, extra) => (await relay(toUpstream, request, extraOf(extra))) as Record<string, never>,
    );
  server.fallbackNotificationHandler = (n) => notify(toUpstream, n);
  // The SDK maps progress to its own requests' tokens; the proxy's requests keep their sender's, so progress is passed on instead.
  server.setNotificationHandler(ProgressNotificationSchema, (n) => notify(toUpstream, n));

  upstream.fallbackRequestHandler = async (request, extra) => (await relay(toClient, request, extraOf(extra))) as never;
  upstream.fallbackNotificationHandler = (n) => notify(toClient, n);
  upstream.setNotificationHandler(ProgressNotificationSchema, (n) => {
    const relatedRequestId = inFlight.get(n.params.progressToken);
    return notify(toClient, n, relatedRequestId !== undefined ? { relatedRequestId } : undefined);
  });

  // Either side closing ends the session; it has ended once the upstream is closed too (a stdio upstream: its process).
  const ended = Promise.withResolvers<void>();
  server.onclose = () => void upstream.close().finally(() => ended.resolve());
  upstream.onclose = () => void server.close().finally(() => ended.resolve());
  server.onerror = (e) => opts.log(`fusegate proxy: ${e.message}`);
  upstream.onerror = (e) => opts.log(`fusegate proxy: upstream: ${e.message}`);
  await server.connect(held);
  return ended.promise;
}

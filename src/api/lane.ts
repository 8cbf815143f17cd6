/**
 * The act lane: a declared keyed act answered from the Node request listener,
 * before h3, for the plain case that makes most of its traffic. Measured on
 * the hop, h3, srvx and the wrappers around the act were about a fifth of it
 * (docs/pipeline.md, "What limits a hop now").
 *
 * It is generated from the act's declaration (api/operation.ts, an act with
 * `lane: true`): the same schema, the same handler and bill, the same act. It
 * takes a request only when nothing about it needs more than that: a JSON
 * body within the limit, a key the auth cache holds fresh (readyKey), no
 * Idempotency-Key and no payment. Anything else returns false before reading
 * a byte, and h3 runs the route as usual. What the lane answers, h3 would
 * have answered the same way: the same headers (x-request-id and CORS from
 * common-headers.ts for both), the same problems from the same functions.
 *
 * The handler is handed an ActEvent built here from the Node request: the
 * typed context (the key and request id; no payment, no Idempotency-Key
 * reservation) and the request's headers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { headersOf, type ActEvent } from './act-event.ts';
import type { z } from 'zod';
import type { ApiKey } from '../ledger/api-keys.ts';
import { PAYMENT_HEADERS } from '../payments/x402/gate.ts';
import { readyKey } from './auth.ts';
import { bodyTooLarge, isJsonType, parseJsonBody, readNodeWithin, validBody } from './body.ts';
import type { AppContext } from './context.ts';
import { problemHeaders, toProblem } from './problem.ts';
import { replyHeaders, type Reply } from './reply.ts';
import { commonHeaders, requestIdFor } from './common-headers.ts';
import { noteCode, noteReceiptId, receiptOfBody } from './request-notes.ts';

/** Takes the request (true) and answers it, or leaves it to h3 (false) having read nothing. */
export type Lane = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface LaneSpec<S extends z.ZodType> {
  path: string;
  schema: S;
  limit: number;
  precondition?: (() => void) | undefined;
  handle: (body: z.output<S>, key: ApiKey, event: ActEvent) => Promise<Reply>;
}

export function actLane<S extends z.ZodType>(ctx: AppContext, spec: LaneSpec<S>): Lane {
  const { path, schema, limit, precondition, handle } = spec;
  async function answer(req: IncomingMessage, res: ServerResponse, key: ApiKey): Promise<void> {
    const requestId = requestIdFor(req);
    try {
      precondition?.();
      const bytes = await readNodeWithin(req, limit);
      if (!bytes) throw bodyTooLarge(limit);
      const body = validBody(schema, parseJsonBody(bytes).value);
      const event: ActEvent = { context: { apiKey: key, requestId }, req: { headers: headersOf(req.headers) } };
      const r = await handle(body, key, event);
      const receiptId = receiptOfBody(r.body);
      if (receiptId) noteReceiptId(req, receiptId);
      send(res, r.status, requestId, replyHeaders(r), JSON.stringify(r.body));
    } catch (error) {
      const p = toProblem(error);
      noteCode(req, p.code);
      if (p.status >= 500)
        ctx.log('error', 'request failed', { request_id: requestId, path, error: String((error as Error).cause ?? error) });
      if (res.headersSent) return void res.destroy();
      send(res, p.status, requestId, problemHeaders(p), JSON.stringify(p.body(path)));
    }
  }
  return (req, res) => {
    const h = req.headers;
    if (h['idempotency-key'] !== undefined || PAYMENT_HEADERS.some((name) => h[name] !== undefined)) return false;
    if (!isJsonType(h['content-type']) || Number(h['content-length'] ?? 0) > limit) return false;
    const key = readyKey(req, ctx);
    if (!key) return false;
    void answer(req, res, key);
    return true;
  };
}

/**
 * As h3 sends a string body (its length stated, not chunked), with the headers
 * the Node listener gives every other answer (common-headers.ts), all in one
 * writeHead: setting them one by one first made Node validate and store each
 * twice.
 */
function send(res: ServerResponse, status: number, requestId: string, headers: Record<string, string>, body: string): void {
  const all = commonHeaders(requestId);
  for (const name in headers) all.push(name, headers[name]!);
  all.push('content-length', String(Buffer.byteLength(body)));
  res.writeHead(status, all);
  res.end(body);
}

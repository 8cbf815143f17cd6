/**
 * What every answer outside /mcp carries, whichever door sends it: its request
 * id (the caller's X-Request-Id when it is sane, else a fresh one) and the CORS
 * headers of an ordinary answer (cors.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { CORS_EXPOSE_HEADERS } from './cors.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id an answer carries: the caller's X-Request-Id when it is sane, else a fresh one. */
export function requestIdOf(incoming: string | null | undefined): string {
  return incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The X-Request-Id a Node request came with, when it is sane (its answer carries it back). */
export function callerRequestId(req: IncomingMessage): string | undefined {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : undefined;
}

/** requestIdOf for a Node request's X-Request-Id header. */
export function requestIdFor(req: IncomingMessage): string {
  return callerRequestId(req) ?? randomUUID();
}

/** The headers every answer outside /mcp carries, as the flat [name, value, ...] list writeHead takes. */
export function commonHeaders(requestId: string): string[] {
  return ['x-request-id', requestId, 'access-control-allow-origin', '*', 'access-control-expose-headers', CORS_EXPOSE_HEADERS];
}

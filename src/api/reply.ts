import { HTTPResponse } from 'h3';

/** A JSON answer as data, so it can be stored (idempotency) and replayed unchanged. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export function reply(body: unknown, status = 200, headers?: Record<string, string>): Reply {
  return headers ? { status, body, headers } : { status, body };
}

/**
 * The HTTP answer for a Reply. h3's HTTPResponse with a string body, not a
 * web `Response`: on Node the latter costs a body stream per request
 * (measured: about 3x fewer requests per second on a small JSON GET).
 */
export function toResponse(r: Reply, extraHeaders?: Record<string, string>): HTTPResponse {
  return new HTTPResponse(JSON.stringify(r.body), { status: r.status, headers: replyHeaders(r, extraHeaders) });
}

/** The headers of a Reply's answer, on every door that sends one (h3 here, the act lane in lane.ts). */
export function replyHeaders(r: Reply, extraHeaders?: Record<string, string>): Record<string, string> {
  return { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...r.headers, ...extraHeaders };
}

/**
 * RFC 9457 problem details as HTTP answers: the one shape of every error this
 * service answers (the Problem itself is src/domain/problem.ts), and the
 * mapping of anything thrown to one.
 */
import { nodeRequestOf, noteCode } from './request-notes.ts';
import { HTTPError, HTTPResponse, type H3Event } from 'h3';
import { Problem } from '../domain/problem.ts';

export { PROBLEM_TYPE_BASE, Problem, type ProblemInit } from '../domain/problem.ts';

export const badRequest = (code: string, detail: string, extra?: Record<string, unknown>) =>
  new Problem({ status: 400, code, title: 'Bad request', detail, ...(extra ? { extra } : {}) });

export const notFound = (detail: string, code = 'not_found') => new Problem({ status: 404, code, title: 'Not found', detail });

export const conflict = (code: string, detail: string) => new Problem({ status: 409, code, title: 'Conflict', detail });

/** Builds the problem+json Response for a Problem. */
export function problemResponse(p: Problem, event?: H3Event): HTTPResponse {
  if (event) noteCode(nodeRequestOf(event), p.code);
  const requestId = event?.context.requestId as string | undefined;
  return new HTTPResponse(JSON.stringify(p.body(event?.url.pathname)), {
    status: p.status,
    headers: { ...problemHeaders(p), ...(requestId ? { 'x-request-id': requestId } : {}) },
  });
}

/** The headers of a problem's answer, on every door that sends one (h3 here, the act lane in lane.ts). */
export function problemHeaders(p: Problem): Record<string, string> {
  return { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...p.headers };
}

/** Maps anything thrown inside a handler to a Problem. Unknown errors are 500s (bugs). */
export function toProblem(error: unknown): Problem {
  let e: unknown = error;
  // h3 wraps errors thrown by handlers in an HTTPError whose cause is the original.
  if (HTTPError.isError(e) && e.cause instanceof Problem) e = e.cause;
  if (e instanceof Problem) return e;
  if (HTTPError.isError(e) && !e.unhandled) {
    const status = e.status;
    if (status === 404) return notFound('no resource at this path', 'route_not_found');
    if (status === 405) {
      return new Problem({ status, code: 'method_not_allowed', title: 'Method not allowed', detail: e.message });
    }
    if (status >= 400 && status < 500) {
      return new Problem({ status, code: 'bad_request', title: e.statusText ?? 'Bad request', detail: e.message });
    }
  }
  const cause = HTTPError.isError(e) ? (e.cause ?? e) : e;
  if ((cause as { name?: string })?.name === 'DatabaseBusyError' || isUnreachable(cause)) {
    return new Problem({
      status: 503,
      code: 'ledger_unavailable',
      title: 'Ledger unavailable',
      detail: 'the ledger cannot be reached; nothing was recorded; retry later',
      headers: { 'retry-after': '1' },
    });
  }
  return new Problem({ status: 500, code: 'internal_error', title: 'Internal error', detail: 'an unexpected error occurred' });
}

/** True for errors that mean the database cannot be reached at all. */
export function isUnreachable(e: unknown): boolean {
  const code = String((e as { code?: string })?.code ?? '');
  const msg = String((e as { message?: string })?.message ?? e);
  return (
    /SQLITE_(CANTOPEN|IOERR|NOTADB|CORRUPT|READONLY)|CLIENT_CLOSED|ECONNREFUSED|HRANA_WEBSOCKET_ERROR|SERVER_ERROR/.test(code) ||
    // PostgreSQL (postgres.js): the connection is gone, or the server is shutting down, starting or read-only (a standby).
    /^(CONNECTION_(CLOSED|ENDED|DESTROYED)|CONNECT_TIMEOUT|ECONNRESET|57P0[1-3]|08\d{3}|25006)$/.test(code) ||
    /unable to open database|client is closed|ECONNREFUSED|disk I\/O error/i.test(msg)
  );
}

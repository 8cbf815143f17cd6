/** A JSON answer as data, so it can be stored (idempotency) and replayed unchanged. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export function reply(body: unknown, status = 200, headers?: Record<string, string>): Reply {
  return headers ? { status, body, headers } : { status, body };
}

export function toResponse(r: Reply, extraHeaders?: Record<string, string>): Response {
  const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  for (const [k, v] of Object.entries({ ...r.headers, ...extraHeaders })) headers.set(k, v);
  return new Response(JSON.stringify(r.body), { status: r.status, headers });
}

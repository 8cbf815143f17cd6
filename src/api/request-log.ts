/**
 * The request log (docs/request-log.md): every request made with a key this
 * service knows (revoked and expired ones too), failures included, with its
 * method, path, status, problem code, key, time, latency and receipt.
 *
 *   GET /v1/requests   any key   the account's requests, newest first, filtered
 *
 * The doors that learn a fact of a request note it (request-notes.ts: the
 * key when it is authenticated, the problem code when one is answered, the
 * receipt when an act wrote one); when the answer has been sent, a keyed
 * request is added to this process's batch (ledger RequestBatch: columns, no
 * object per request), written every
 * REQUEST_LOG_FLUSH_MS in one multi-row insert that read caches do not count
 * as a change (never a write per request: the hop stays one group commit).
 * No body, query string, header or secret is kept.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { ownerId, ownerParts } from '../ledger/accounts.ts';
import { accountKeysPage, cachedSecret, type ApiKey } from '../ledger/api-keys.ts';
import {
  deleteRequestsBefore,
  insertPackedRequests,
  listRequests,
  nextLoggedAccount,
  RequestBatch,
  requestTime,
  type RequestFilter,
  type RequestRow,
} from '../ledger/request-log.ts';
import { verifyUrl } from '../ledger/receipts.ts';
import { cacheNow, type AppContext } from './context.ts';
import { intervalJob } from './jobs.ts';
import { badRequest } from './problem.ts';
import { reply } from './reply.ts';
import type { Router } from './router.ts';
import { callerRequestId } from './common-headers.ts';
import { watchRequest, type NotesReader, type RequestNotes } from './request-notes.ts';
import { operation } from './operation.ts';

export const REQUESTS_PATH = '/v1/requests';

const logs = new WeakMap<AppContext, RequestLog>();

/** This process's request log for `ctx` (one per context: the listener fills it, the routes flush it). */
export function requestLogOf(ctx: AppContext): RequestLog {
  let log = logs.get(ctx);
  if (!log) logs.set(ctx, (log = new RequestLog(ctx)));
  return log;
}

/** This process's requests not yet written. */
export class RequestLog implements NotesReader {
  readonly #ctx: AppContext;
  /** The requests answered since the last write. */
  readonly #batch = new RequestBatch();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();
  #closed = false;
  /** The time of the last request buffered: never going back, so that a write's ids ascend. */
  #lastMs = 0;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
  }

  /**
   * Watches a request that carries an Authorization header: once its answer is sent, it is logged
   * if a known key made it. Its arrival is the first of its notes, which the doors fill in.
   */
  watch(req: IncomingMessage): void {
    watchRequest(req, this, performance.now());
  }

  answered(res: ServerResponse, n: RequestNotes): void {
    const req = res.req;
    const key = n.key ?? this.#knownKey(req);
    if (!key || this.#closed) return;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    this.#batch.add(
      ownerId(key),
      key.id,
      req.method ?? 'GET',
      (q === -1 ? url : url.slice(0, q)).slice(0, 512),
      res.statusCode,
      n.code,
      Math.round((performance.now() - n.arrived) * 1000),
      n.receiptId,
      // Only the caller's own id: one made for the answer would be a random string nobody holds.
      callerRequestId(req),
      (this.#lastMs = Math.max(this.#lastMs, Date.now())),
    );
    this.#timer ??= setTimeout(() => void this.flush(), this.#ctx.config.REQUEST_LOG_FLUSH_MS).unref();
  }

  /**
   * The key of a request answered without reading it (a path that serves
   * nothing, a method it is not served with), when the auth cache holds it:
   * those mistakes are a new user's first, and belong in the log too.
   */
  #knownKey(req: IncomingMessage): ApiKey | undefined {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    return m ? cachedSecret(this.#ctx.ledger.read, m[1]!, cacheNow(this.#ctx))?.key : undefined;
  }

  /** Writes what is pending now (one write, unseen by read caches); resolves when it is written. A failed write is logged, and its rows dropped. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // Packed here, so that the transaction (often the hops' own group commit) only inserts.
    const rows = this.#batch.pack();
    const write = async () => {
      if (rows.length === 0) return;
      try {
        await this.#ctx.ledger.write((tx) => insertPackedRequests(tx, rows), { unseen: true });
      } catch (e) {
        this.#ctx.log('error', 'request log rows not written', { accounts: rows.length, error: String(e) });
      }
    };
    this.#flushing = this.#flushing.then(write);
    return this.#flushing;
  }

  /** Writes what is pending and takes no more (before the ledger closes). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
  }
}

const LIST_LIMIT_MAX = 200;
const statusFilter = z
  .string()
  .regex(/^([1-5]xx|[1-5]\d\d|failed)$/, 'an HTTP status (404), a class (4xx) or "failed" (every status from 400)')
  .optional();
const listQuery = z.strictObject({
  key: z.string().min(1).max(200).optional().describe('a key of the account, by id or by name'),
  status: statusFilter.describe('an HTTP status (404), a class (4xx) or "failed" (every status from 400)'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']).optional(),
  code: z
    .string()
    .regex(/^[a-z0-9_]{1,64}$/, 'a problem code such as hop_limit_reached')
    .optional(),
  path: z.string().startsWith('/', 'a path starting with /').max(512).optional().describe('requests whose path starts with this'),
  from: z.iso.datetime().optional().describe('from this instant (inclusive)'),
  to: z.iso.datetime().optional().describe('before this instant'),
  limit: z.coerce.number().int().min(1).max(LIST_LIMIT_MAX).default(50),
  before: z
    .string()
    .regex(/^req_[A-Za-z0-9_-]{1,80}$/, 'the `next` cursor of an earlier page')
    .optional(),
});

/** The rows as the API answers them, with each key's name. */
function requestView(ctx: AppContext, r: RequestRow, names: Map<string, string>) {
  return {
    object: 'request' as const,
    id: r.id,
    at: requestTime(r.id),
    method: r.method,
    path: r.path,
    status: r.status,
    code: r.code,
    latency_ms: r.latency_us / 1000,
    key_id: r.key_id,
    key_name: names.get(r.key_id) ?? null,
    receipt_id: r.receipt_id,
    verify_url: r.receipt_id ? verifyUrl(ctx, r.receipt_id) : null,
    request_id: r.request_id,
  };
}

/** Every key of an owner (for names and for a filter by name): an account's live keys, or its test side's test keys. */
async function accountKeys(ctx: AppContext, owner: string): Promise<ApiKey[]> {
  const { accountId, mode } = ownerParts(owner);
  const all: ApiKey[] = [];
  for (;;) {
    const page = await accountKeysPage(ctx.ledger.read, accountId, 500, all.at(-1), mode);
    all.push(...page);
    if (page.length < 500) return all;
  }
}

/** The filter a query asks for; a key named that the account lacks is a 400. */
function filterOf(q: z.output<typeof listQuery>, keys: ApiKey[]): RequestFilter {
  let keyIds: string[] | undefined;
  if (q.key !== undefined) {
    keyIds = keys.filter((k) => k.id === q.key || k.name === q.key).map((k) => k.id);
    if (keyIds.length === 0)
      throw badRequest('unknown_key_filter', `no key ${q.key} in this account (by id or by name)`, {
        errors: [{ field: 'key', message: 'not a key of this account' }],
      });
  }
  const s = q.status;
  return {
    keyIds,
    ...(s === 'failed'
      ? { failed: true }
      : s?.endsWith('xx')
        ? { statusClass: Number(s[0]) as 2 | 3 | 4 | 5 }
        : s
          ? { status: Number(s) }
          : {}),
    method: q.method,
    code: q.code,
    pathPrefix: q.path,
    from: q.from,
    to: q.to,
  };
}

/** One page of the account's request log, as the API and the dashboard show it. */
export async function requestPage(ctx: AppContext, log: RequestLog, accountId: string, q: z.output<typeof listQuery>) {
  // This process's own requests are written first, so that a request just made is in the page.
  await log.flush();
  const keys = await accountKeys(ctx, accountId);
  const page = await listRequests(ctx.ledger.read, accountId, filterOf(q, keys), q.limit, q.before);
  const names = new Map(keys.map((k) => [k.id, k.name]));
  return {
    object: 'list' as const,
    enabled: ctx.config.REQUEST_LOG_ENABLED,
    retention_days: ctx.config.REQUEST_LOG_RETENTION_DAYS,
    data: page.requests.map((r) => requestView(ctx, r, names)),
    next: page.next ?? null,
  };
}

const requestObject = z.looseObject({
  object: z.literal('request'),
  id: z.string(),
  at: z.string(),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  code: z.string().nullable(),
  latency_ms: z.number(),
  key_name: z.string().nullable(),
  receipt_id: z.string().nullable(),
});

/** How many rows one retention sweep deletes per statement. */
const SWEEP_CHUNK = 5_000;

export function registerRequestLogRoutes(router: Router, ctx: AppContext): void {
  const log = requestLogOf(ctx);
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: REQUESTS_PATH,
      summary:
        "The account's request log, newest first: every request made with one of its keys, failures included (method, path, status, problem code, key, time, latency, receipt); no body or secret is kept",
      auth: 'key',
      tag: 'system',
      query: listQuery,
      response: z.looseObject({
        object: z.literal('list'),
        enabled: z.boolean(),
        retention_days: z.number(),
        data: z.array(requestObject),
        next: z.string().nullable(),
      }),
      problems: [400],
    },
    async ({ key, input }) => reply(await requestPage(ctx, log, ownerId(key), input), 200, { 'cache-control': 'private, no-store' }),
  );
  // Past REQUEST_LOG_RETENTION_DAYS a row is deleted by the node holding the job's lease.
  router.job(intervalJob(ctx, 'request log retention', 60 * 60 * 1000, async () => void (await sweepRequestLog(ctx))));
}

/** Deletes the rows past REQUEST_LOG_RETENTION_DAYS at `now`, a chunk at a time; how many. */
export async function sweepRequestLog(ctx: AppContext, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - ctx.config.REQUEST_LOG_RETENTION_DAYS * 86_400_000).toISOString();
  let deleted = 0;
  for (
    let account = await nextLoggedAccount(ctx.ledger.read, '');
    account !== undefined;
    account = await nextLoggedAccount(ctx.ledger.read, account)
  ) {
    for (;;) {
      const n = await ctx.ledger.write((tx) => deleteRequestsBefore(tx, account!, before, SWEEP_CHUNK), { unseen: true });
      deleted += n;
      if (n < SWEEP_CHUNK) break;
    }
  }
  return deleted;
}

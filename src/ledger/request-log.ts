/**
 * The request log (docs/request-log.md): each process writes the keyed
 * requests it answered every REQUEST_LOG_FLUSH_MS (api/request-log.ts), one
 * row per account, its requests packed in `entries`; read newest first with
 * filters applied as the rows are unpacked; deleted past its retention.
 *
 * A row's requests span one flush of one process, so rows of several
 * processes overlap a little in time. Read in order of their `last` id, every
 * request newer than the last row read has been seen: that is what makes a
 * page exact (`listRequests`).
 */
import { newId, sortableTimePrefix } from '../ids.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface RequestRow {
  /** `req_` and the time in ms as ids.ts's sortable ids, then the row's random part and place: unique, ordered as answered. */
  id: string;
  key_id: string;
  method: string;
  /** The path without its query string. */
  path: string;
  status: number;
  /** The problem's `code` of a 4xx or 5xx answer. */
  code: string | null;
  latency_us: number;
  receipt_id: string | null;
  /** The X-Request-Id the caller sent, when it sent one. */
  request_id: string | null;
}

/** A request as the process that answered it hands it over: its time in ms, its id made when it is written. */
export type AnsweredRequest = Omit<RequestRow, 'id'> & { ms: number };

/**
 * A request as a row's `entries` hold it: [ms after the row's first, key,
 * route, status, latency µs, receipt, code, request id], the last three only
 * when the request has them (trailing ones left out, one in the middle as 0):
 * a hop with its receipt is about 50 bytes, an answer with none about 20.
 */
type PackedRequest = [number, number, number, number, number, (string | 0)?, (string | 0)?, string?];
/** How the first rows wrote a request: every field, the request id always (a fresh one when the caller sent none). */
type PackedRequestV1 = [number, number, number, number, string | 0, number, string | 0, string];

/**
 * A row's `entries`: the write's random part, the first request's time, the
 * keys and the routes (method and path) its requests name, then each request
 * (PackedRequest), then the layout's version (2; rows of the first layout have
 * none). A request's id is made from the row (`idOf`), not written.
 */
type PackedRow =
  | [nonce: string, t0: number, keys: string[], routes: string[], requests: PackedRequest[], version: 2]
  | [nonce: string, t0: number, keys: string[], routes: string[], requests: PackedRequestV1[]];

const ID_PREFIX = 'req_';
/** The id of the `i`th request of a row: `req_`, its time as ids.ts's sortable ids, the row's random part, `i`. */
const idOf = (nonce: string, ms: number, i: number): string =>
  `${ID_PREFIX}${sortableTimePrefix(ms)}${nonce}${i.toString(36).padStart(5, '0')}`;
/** The smallest id of a request answered at or after `ms`. */
const idAt = (ms: number): string => ID_PREFIX + sortableTimePrefix(ms);
/** When a request was answered: its id's time. */
export const requestTime = (id: string): string =>
  new Date(Number.parseInt(id.slice(ID_PREFIX.length, ID_PREFIX.length + 12), 16)).toISOString();

function packRequest(r: AnsweredRequest, dMs: number, key: number, route: number): PackedRequest {
  const p: PackedRequest = [dMs, key, route, r.status, r.latency_us];
  if (r.request_id !== null) p.push(r.receipt_id ?? 0, r.code ?? 0, r.request_id);
  else if (r.code !== null) p.push(r.receipt_id ?? 0, r.code);
  else if (r.receipt_id !== null) p.push(r.receipt_id);
  return p;
}

function packRow(rs: readonly AnsweredRequest[]): { first: string; last: string; entries: string } {
  const nonce = newId('w', 6).slice(2);
  const keys = new Map<string, number>();
  const routes = new Map<string, number>();
  const indexIn = (m: Map<string, number>, v: string) => {
    let i = m.get(v);
    if (i === undefined) m.set(v, (i = m.size));
    return i;
  };
  const t0 = rs[0]!.ms;
  const requests = rs.map((r) => packRequest(r, r.ms - t0, indexIn(keys, r.key_id), indexIn(routes, `${r.method} ${r.path}`)));
  const row: PackedRow = [nonce, t0, [...keys.keys()], [...routes.keys()], requests, 2];
  return { first: idOf(nonce, t0, 0), last: idOf(nonce, rs.at(-1)!.ms, rs.length - 1), entries: JSON.stringify(row) };
}

function unpackRow(text: string): RequestRow[] {
  const row = JSON.parse(text) as PackedRow;
  const [nonce, t0, keys, routes] = row;
  const unpacked = (i: number, dMs: number, key: number, route: number): Pick<RequestRow, 'id' | 'key_id' | 'method' | 'path'> => {
    const r = routes[route]!;
    const space = r.indexOf(' ');
    return { id: idOf(nonce, t0 + dMs, i), key_id: keys[key]!, method: r.slice(0, space), path: r.slice(space + 1) };
  };
  if (row.length === 6)
    return row[4].map(([dMs, key, route, status, latency_us, receipt, code, request_id], i) => ({
      ...unpacked(i, dMs, key, route),
      status,
      code: code || null,
      latency_us,
      receipt_id: receipt || null,
      request_id: request_id ?? null,
    }));
  return row[4].map(([dMs, key, route, status, code, latency_us, receipt, request_id], i) => ({
    ...unpacked(i, dMs, key, route),
    status,
    code: code || null,
    latency_us,
    receipt_id: receipt || null,
    request_id,
  }));
}

/** One process's requests as the rows `insertPackedRequests` writes: one row per account, packed before the write. */
export type PackedRequests = Array<[account: string, last: string, first: string, count: number, entries: string]>;

/** Packs one process's requests by account (each account's in the order answered, their times never going back). */
export function packRequests(byAccount: ReadonlyMap<string, readonly AnsweredRequest[]>): PackedRequests {
  return [...byAccount].map(([account, rs]) => {
    const { first, last, entries } = packRow(rs);
    return [account, last, first, rs.length, entries];
  });
}

/** Writes packed requests: one insert, nothing else done inside the transaction. */
export async function insertPackedRequests(tx: Transaction, rows: PackedRequests): Promise<void> {
  await insertRows(tx, 'request_log', ['account_id', 'last', 'first', 'request_count', 'entries'], rows);
}

/** Writes one process's requests (packRequests, then insertPackedRequests). */
export async function insertRequests(tx: Transaction, byAccount: ReadonlyMap<string, readonly AnsweredRequest[]>): Promise<void> {
  await insertPackedRequests(tx, packRequests(byAccount));
}

/** What a reader narrows the log by; every field optional. */
export interface RequestFilter {
  keyIds?: readonly string[] | undefined;
  status?: number | undefined;
  /** 2 for 2xx, 4 for 4xx, 5 for 5xx. */
  statusClass?: 2 | 3 | 4 | 5 | undefined;
  /** Only answers that failed (status 400 and above). */
  failed?: boolean | undefined;
  method?: string | undefined;
  code?: string | undefined;
  /** Paths that start with this. */
  pathPrefix?: string | undefined;
  /** ISO instants, inclusive from, exclusive to. */
  from?: string | undefined;
  to?: string | undefined;
}

function matcher(f: RequestFilter): (r: RequestRow) => boolean {
  const keys = f.keyIds?.length ? new Set(f.keyIds) : undefined;
  const from = f.from ? idAt(Date.parse(f.from)) : undefined;
  const to = f.to ? idAt(Date.parse(f.to)) : undefined;
  return (r) =>
    (!keys || keys.has(r.key_id)) &&
    (f.status === undefined || r.status === f.status) &&
    (f.statusClass === undefined || Math.floor(r.status / 100) === f.statusClass) &&
    (!f.failed || r.status >= 400) &&
    (!f.method || r.method === f.method) &&
    (!f.code || r.code === f.code) &&
    (!f.pathPrefix || r.path.startsWith(f.pathPrefix)) &&
    (!from || r.id >= from) &&
    (!to || r.id < to);
}

/** Rows read per statement while paging. */
const ROWS_PER_READ = 16;
/**
 * How far past a row's `first` its `last` may be: a row holds one flush of one
 * process, REQUEST_LOG_FLUSH_MS and the time a flush waits its turn; this is
 * ample. It bounds the rows a page `before` a request must read.
 */
const ROW_SPAN_MAX_MS = 10 * 60 * 1000;

export interface RequestPage {
  requests: RequestRow[];
  /** Pass as `before` for the next page; undefined at the end. */
  next: string | undefined;
}

/**
 * One page of an account's requests, newest first: at most `limit` that match
 * `filter`, those before the request `before`. Examines at most `budget`
 * requests: a rare filter then answers fewer, with the cursor to go on.
 */
export async function listRequests(
  db: Client,
  accountId: string,
  filter: RequestFilter,
  limit: number,
  before?: string,
  budget = 100_000,
): Promise<RequestPage> {
  const keep = matcher(filter);
  // A row holding a request before `before` ends at most ROW_SPAN_MAX_MS after it; toward the
  // other end, a `to` filter skips every row that starts after it.
  let below = before ? idAt(Date.parse(requestTime(before)) + ROW_SPAN_MAX_MS + 1) : undefined;
  if (filter.to) {
    const toBound = idAt(Date.parse(filter.to) + ROW_SPAN_MAX_MS + 1);
    if (!below || toBound < below) below = toBound;
  }
  const floor = filter.from ? idAt(Date.parse(filter.from)) : undefined;
  const candidates: RequestRow[] = [];
  let examined = 0;
  let seenDownTo: string | undefined;
  for (;;) {
    const where = ['account_id = ?'];
    const args: Array<string | number> = [accountId];
    if (below) (where.push('last < ?'), args.push(below));
    if (floor) (where.push('last >= ?'), args.push(floor));
    const rs = await db.execute({
      sql: `SELECT last, entries FROM request_log WHERE ${where.join(' AND ')} ORDER BY last DESC LIMIT ?`,
      args: [...args, ROWS_PER_READ],
    });
    for (const row of rs.rows) {
      for (const r of unpackRow(String(row.entries))) {
        examined++;
        if ((!before || r.id < before) && keep(r)) candidates.push(r);
      }
      seenDownTo = below = String(row.last);
    }
    const done = rs.rows.length < ROWS_PER_READ;
    // Every request at or after `seenDownTo` has been read: no row left ends later.
    const settled = done ? candidates : candidates.filter((r) => r.id >= seenDownTo!);
    if (done || settled.length >= limit || examined >= budget) {
      settled.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
      const page = settled.slice(0, limit);
      if (page.length === limit) return { requests: page, next: page.at(-1)!.id };
      return { requests: page, next: done ? undefined : seenDownTo };
    }
  }
}

/** The first account after `after` (in key order) with rows in the log: one index seek each, for the sweep. */
export async function nextLoggedAccount(db: Client, after: string): Promise<string | undefined> {
  const rs = await db.execute({
    sql: 'SELECT account_id FROM request_log WHERE account_id > ? ORDER BY account_id LIMIT 1',
    args: [after],
  });
  return rs.rows[0] ? String(rs.rows[0].account_id) : undefined;
}

/** Deletes up to `limit` of `accountId`'s rows whose requests were all answered before `before` (ISO); the count deleted. */
export async function deleteRequestsBefore(tx: Transaction, accountId: string, before: string, limit: number): Promise<number> {
  const rs = await tx.execute({
    sql: 'DELETE FROM request_log WHERE account_id = ? AND last IN (SELECT last FROM request_log WHERE account_id = ? AND last < ? ORDER BY last LIMIT ?)',
    args: [accountId, accountId, idAt(Date.parse(before)), limit],
  });
  return rs.rowsAffected;
}

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
import { sortableTimePrefix } from '../ids.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface RequestRow {
  /** `req_` and the time in ms (ids.ts, newSortableId): unique, and ordered as the requests were answered. */
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
  request_id: string;
}

/** A request as packed in a row's `entries`. */
type Packed = [id: string, keyId: string, method: string, path: string, status: number, code: string | null, latencyUs: number, receiptId: string | null, requestId: string];

const pack = (r: RequestRow): Packed => [r.id, r.key_id, r.method, r.path, r.status, r.code, r.latency_us, r.receipt_id, r.request_id];
const unpack = ([id, key_id, method, path, status, code, latency_us, receipt_id, request_id]: Packed): RequestRow => ({ id, key_id, method, path, status, code, latency_us, receipt_id, request_id });

const ID_PREFIX = 'req_';
/** The smallest id of a request answered at or after `ms`. */
const idAt = (ms: number): string => ID_PREFIX + sortableTimePrefix(ms);
/** When a request was answered: its id's time. */
export const requestTime = (id: string): string => new Date(Number.parseInt(id.slice(ID_PREFIX.length, ID_PREFIX.length + 12), 16)).toISOString();

/** Writes one process's requests, one row per account (`requests` by account, each in the order answered). */
export async function insertRequests(tx: Transaction, byAccount: ReadonlyMap<string, readonly RequestRow[]>): Promise<void> {
  const rows = [...byAccount].map(([account, rs]) => {
    const ids = rs.map((r) => r.id).sort();
    return [account, ids.at(-1)!, ids[0]!, rs.length, JSON.stringify(rs.map(pack))];
  });
  await insertRows(tx, 'request_log', ['account_id', 'last', 'first', 'request_count', 'entries'], rows);
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
export async function listRequests(db: Client, accountId: string, filter: RequestFilter, limit: number, before?: string, budget = 100_000): Promise<RequestPage> {
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
    if (below) where.push('last < ?'), args.push(below);
    if (floor) where.push('last >= ?'), args.push(floor);
    const rs = await db.execute({ sql: `SELECT last, entries FROM request_log WHERE ${where.join(' AND ')} ORDER BY last DESC LIMIT ?`, args: [...args, ROWS_PER_READ] });
    for (const row of rs.rows) {
      for (const p of JSON.parse(String(row.entries)) as Packed[]) {
        examined++;
        const r = unpack(p);
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
  const rs = await db.execute({ sql: 'SELECT account_id FROM request_log WHERE account_id > ? ORDER BY account_id LIMIT 1', args: [after] });
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

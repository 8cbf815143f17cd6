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
 * A column of a row's `entries`: one value per request, or a single value when
 * every request of the row has the same (a key, a route, a status repeated
 * thousands of times is written once).
 */
type Packed<T> = T | T[];
const valueAt = <T>(column: Packed<T>, i: number): T => (Array.isArray(column) ? column[i]! : column);

/** `column[i]` for each of `rows` (through `map` if given), or that one value when they are all the same. */
function numbersAt(column: Uint16Array | Uint32Array, rows: readonly number[], map?: Int32Array): Packed<number> {
  const first = column[rows[0]!]!;
  let j = 1;
  while (j < rows.length && column[rows[j]!] === first) j++;
  if (j === rows.length) return map ? map[first]! : first;
  const out: number[] = [];
  for (const i of rows) out.push(map ? map[column[i]!]! : column[i]!);
  return out;
}

/**
 * A row's `entries` (layout 3): the write's random part, the first request's
 * time, the keys and the routes (method and path) its requests name, the
 * layout's version, the number of requests, then a column per field: ms after
 * the request before, key, route, status, latency µs, receipt, problem code,
 * request id (0 where a request has none). Constant columns are folded, so an
 * answer with no receipt is a few bytes, and packing one is a few array writes.
 * A request's id is made from the row (`idOf`), not written.
 */
type PackedRowV3 = [
  nonce: string,
  t0: number,
  keys: string[],
  routes: string[],
  version: 3,
  count: number,
  dMs: Packed<number>,
  key: Packed<number>,
  route: Packed<number>,
  status: Packed<number>,
  latencyUs: Packed<number>,
  receipt: Packed<string | 0>,
  code: Packed<string | 0>,
  requestId: Packed<string | 0>,
];
/** Layout 2: each request as [ms after the row's first, key, route, status, latency µs, receipt?, code?, request id?]. */
type PackedRequestV2 = [number, number, number, number, number, (string | 0)?, (string | 0)?, string?];
/** Layout 1: every field, the request id always. */
type PackedRequestV1 = [number, number, number, number, string | 0, number, string | 0, string];
type PackedRow =
  | PackedRowV3
  | [nonce: string, t0: number, keys: string[], routes: string[], requests: PackedRequestV2[], version: 2]
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

/** A column of numbers that grows as requests are added. */
type Column = Float64Array | Uint32Array | Uint16Array;
const grown = <C extends Column>(c: C, size: number): C => {
  const next = new (c.constructor as new (n: number) => C)(size);
  next.set(c);
  return next;
};

/** The index of `v` in `m`, added at the end when new. */
function indexIn(m: Map<string, number>, v: string): number {
  let i = m.get(v);
  if (i === undefined) m.set(v, (i = m.size));
  return i;
}

/**
 * Requests answered and not yet written, column by column. Adding one keeps
 * no object of its own: its numbers go in typed arrays, its key, route and
 * code become indexes, and its receipt and request id are copied as bytes. A
 * second of requests then holds nothing the collector must trace or promote,
 * which is most of what the log would otherwise cost a busy process.
 */
export class RequestBatch {
  #size = 0;
  #ms = new Float64Array(256);
  #status = new Uint16Array(256);
  #latencyUs = new Uint32Array(256);
  #key = new Uint32Array(256);
  #route = new Uint32Array(256);
  /** The code's index plus one; 0 for none. */
  #code = new Uint32Array(256);
  /** Where the receipt and the request id start in #text, and their lengths (0: none). */
  #textAt = new Uint32Array(256);
  #receiptLength = new Uint16Array(256);
  #requestIdLength = new Uint16Array(256);
  #text: Buffer = Buffer.allocUnsafe(16_384);
  #textEnd = 0;
  /** Each key's index, by id, and its account. */
  readonly #keys = new Map<string, number>();
  #keyAccounts: string[] = [];
  /** Each route ("METHOD /path") by method, then path, so that a request's path is looked up as it came. */
  readonly #routes = new Map<string, Map<string, number>>();
  #routeNames: string[] = [];
  readonly #codes = new Map<string, number>();

  /**
   * Adds a request answered at `ms` (never before the last one added of its
   * account: a row's ids ascend). Ids are ASCII (receipt ids are this
   * service's, request ids checked by the door).
   */
  add(
    account: string,
    keyId: string,
    method: string,
    path: string,
    status: number,
    code: string | null | undefined,
    latencyUs: number,
    receiptId: string | null | undefined,
    requestId: string | null | undefined,
    ms: number,
  ): void {
    const i = this.#size;
    if (i === this.#ms.length) this.#grow();
    this.#ms[i] = ms;
    this.#status[i] = status;
    this.#latencyUs[i] = Math.min(latencyUs, 0xffff_ffff);
    let key = this.#keys.get(keyId);
    if (key === undefined) {
      this.#keys.set(keyId, (key = this.#keyAccounts.length));
      this.#keyAccounts.push(account);
    }
    this.#key[i] = key;
    let paths = this.#routes.get(method);
    if (!paths) this.#routes.set(method, (paths = new Map()));
    let route = paths.get(path);
    if (route === undefined) {
      paths.set(path, (route = this.#routeNames.length));
      this.#routeNames.push(`${method} ${path}`);
    }
    this.#route[i] = route;
    this.#code[i] = code ? indexIn(this.#codes, code) + 1 : 0;
    const textLength = (receiptId?.length ?? 0) + (requestId?.length ?? 0);
    if (this.#textEnd + textLength > this.#text.length) this.#text = this.#grownText(textLength);
    this.#textAt[i] = this.#textEnd;
    this.#receiptLength[i] = receiptId ? this.#text.write(receiptId, this.#textEnd, 'latin1') : 0;
    this.#textEnd += this.#receiptLength[i]!;
    this.#requestIdLength[i] = requestId ? this.#text.write(requestId, this.#textEnd, 'latin1') : 0;
    this.#textEnd += this.#requestIdLength[i]!;
    this.#size = i + 1;
  }

  #grow(): void {
    const n = this.#ms.length * 2;
    this.#ms = grown(this.#ms, n);
    this.#status = grown(this.#status, n);
    this.#latencyUs = grown(this.#latencyUs, n);
    this.#key = grown(this.#key, n);
    this.#route = grown(this.#route, n);
    this.#code = grown(this.#code, n);
    this.#textAt = grown(this.#textAt, n);
    this.#receiptLength = grown(this.#receiptLength, n);
    this.#requestIdLength = grown(this.#requestIdLength, n);
  }

  #grownText(more: number): Buffer {
    const next = Buffer.allocUnsafe(Math.max(this.#text.length * 2, this.#textEnd + more));
    this.#text.copy(next, 0, 0, this.#textEnd);
    return next;
  }

  /**
   * The batch as the rows `insertPackedRequests` writes: one row per account,
   * its requests in the order added; the batch is then empty, its room kept.
   */
  pack(): PackedRequests {
    const byAccount = new Map<string, number[]>();
    for (let i = 0; i < this.#size; i++) {
      const account = this.#keyAccounts[this.#key[i]!]!;
      const rows = byAccount.get(account);
      if (rows) rows.push(i);
      else byAccount.set(account, [i]);
    }
    const codes = [...this.#codes.keys()];
    const keyIds = [...this.#keys.keys()];
    const codeOf = (c: number): string | 0 => (c === 0 ? 0 : codes[c - 1]!);
    const packed: PackedRequests = [];
    for (const [account, rows] of byAccount) {
      const nonce = newId('w', 6).slice(2);
      // The batch's key and route indexes as this row's own, in the order the row first names them.
      const keys: string[] = [];
      const keyOf = new Int32Array(keyIds.length).fill(-1);
      const routes: string[] = [];
      const routeOf = new Int32Array(this.#routeNames.length).fill(-1);
      for (const i of rows) {
        const k = this.#key[i]!;
        if (keyOf[k] === -1) keyOf[k] = keys.push(keyIds[k]!) - 1;
        const r = this.#route[i]!;
        if (routeOf[r] === -1) routeOf[r] = routes.push(this.#routeNames[r]!) - 1;
      }
      const t0 = this.#ms[rows[0]!]!;
      const code = numbersAt(this.#code, rows);
      const row: PackedRowV3 = [
        nonce,
        t0,
        keys,
        routes,
        3,
        rows.length,
        this.#gaps(rows),
        numbersAt(this.#key, rows, keyOf),
        numbersAt(this.#route, rows, routeOf),
        numbersAt(this.#status, rows),
        numbersAt(this.#latencyUs, rows),
        this.#texts(rows, 0),
        typeof code === 'number' ? codeOf(code) : code.map(codeOf),
        this.#texts(rows, 1),
      ];
      packed.push([account, idOf(nonce, this.#ms[rows.at(-1)!]!, rows.length - 1), idOf(nonce, t0, 0), rows.length, JSON.stringify(row)]);
    }
    this.#clear();
    return packed;
  }

  /** The ms between each of `rows` and the one before (0 for the first), folded when constant. */
  #gaps(rows: readonly number[]): Packed<number> {
    const ms = this.#ms;
    const out = [0];
    let constant = true;
    for (let j = 1; j < rows.length; j++) {
      const gap = ms[rows[j]!]! - ms[rows[j - 1]!]!;
      constant &&= gap === out[0];
      out.push(gap);
    }
    return constant ? 0 : out;
  }

  /** The receipts (`which` 0) or request ids (1) of `rows`, 0 where one has none; 0 alone when none has one. */
  #texts(rows: readonly number[], which: 0 | 1): Packed<string | 0> {
    const lengths = which === 0 ? this.#receiptLength : this.#requestIdLength;
    if (numbersAt(lengths, rows) === 0) return 0;
    return rows.map((i) => {
      const at = this.#textAt[i]! + (which === 0 ? 0 : this.#receiptLength[i]!);
      return lengths[i] ? this.#text.toString('latin1', at, at + lengths[i]!) : 0;
    });
  }

  #clear(): void {
    this.#size = 0;
    this.#textEnd = 0;
    this.#keys.clear();
    this.#keyAccounts = [];
    this.#routes.clear();
    this.#routeNames = [];
    this.#codes.clear();
  }
}

function unpackRow(text: string): RequestRow[] {
  const row = JSON.parse(text) as PackedRow;
  const [nonce, t0, keys, routes] = row;
  const unpacked = (i: number, ms: number, key: number, route: number): Pick<RequestRow, 'id' | 'key_id' | 'method' | 'path'> => {
    const r = routes[route]!;
    const space = r.indexOf(' ');
    return { id: idOf(nonce, ms, i), key_id: keys[key]!, method: r.slice(0, space), path: r.slice(space + 1) };
  };
  if (row[4] === 3) {
    const [, , , , , count, dMs, key, route, status, latency, receipt, code, requestId] = row;
    const out: RequestRow[] = [];
    for (let i = 0, ms = t0; i < count; i++) {
      ms += valueAt(dMs, i);
      out.push({
        ...unpacked(i, ms, valueAt(key, i), valueAt(route, i)),
        status: valueAt(status, i),
        code: valueAt(code, i) || null,
        latency_us: valueAt(latency, i),
        receipt_id: valueAt(receipt, i) || null,
        request_id: valueAt(requestId, i) || null,
      });
    }
    return out;
  }
  if (row.length === 6)
    return row[4].map(([dMs, key, route, status, latency_us, receipt, code, request_id], i) => ({
      ...unpacked(i, t0 + dMs, key, route),
      status,
      code: code || null,
      latency_us,
      receipt_id: receipt || null,
      request_id: request_id ?? null,
    }));
  return (row[4] as PackedRequestV1[]).map(([dMs, key, route, status, code, latency_us, receipt, request_id], i) => ({
    ...unpacked(i, t0 + dMs, key, route),
    status,
    code: code || null,
    latency_us,
    receipt_id: receipt || null,
    request_id,
  }));
}

/** One process's requests as the rows `insertPackedRequests` writes: one row per account, packed before the write. */
export type PackedRequests = Array<[account: string, last: string, first: string, count: number, entries: string]>;

/** Writes packed requests: one insert, nothing else done inside the transaction. */
export async function insertPackedRequests(tx: Transaction, rows: PackedRequests): Promise<void> {
  await insertRows(tx, 'request_log', ['account_id', 'last', 'first', 'request_count', 'entries'], rows);
}

/** Writes requests given as objects (each account's in the order answered, their times never going back). */
export async function insertRequests(tx: Transaction, byAccount: ReadonlyMap<string, readonly AnsweredRequest[]>): Promise<void> {
  const batch = new RequestBatch();
  for (const [account, rs] of byAccount)
    for (const r of rs) batch.add(account, r.key_id, r.method, r.path, r.status, r.code, r.latency_us, r.receipt_id, r.request_id, r.ms);
  await insertPackedRequests(tx, batch.pack());
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

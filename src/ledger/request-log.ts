/**
 * The request log (docs/request-log.md): one row per keyed request, written
 * in batches by the process that answered it (api/request-log.ts), read by the
 * account newest first, deleted past its retention.
 */
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface RequestRow {
  /** Sorts by time (ids.ts, newSortableId): pages are ranges of it. */
  id: string;
  account_id: string;
  key_id: string;
  at: string;
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

const COLUMNS = ['id', 'account_id', 'key_id', 'at', 'method', 'path', 'status', 'code', 'latency_us', 'receipt_id', 'request_id'] as const;

export async function insertRequests(tx: Transaction, rows: readonly RequestRow[]): Promise<void> {
  await insertRows(tx, 'request_log', COLUMNS, rows.map((r) => COLUMNS.map((c) => r[c])));
}

/** What a reader narrows the log by; every field optional. */
export interface RequestFilter {
  keyIds?: readonly string[] | undefined;
  /** An exact status, or a class: 2 for 2xx, 4 for 4xx, 5 for 5xx. */
  status?: number | undefined;
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

/** One page of an account's requests, newest first: at most `limit`, those older than the row `before` (its id). */
export async function listRequests(db: Client, accountId: string, filter: RequestFilter, limit: number, before?: string): Promise<RequestRow[]> {
  const where = ['account_id = ?'];
  const args: Array<string | number> = [accountId];
  if (before) where.push('id < ?'), args.push(before);
  if (filter.keyIds?.length) where.push(`key_id IN (${filter.keyIds.map(() => '?').join(', ')})`), args.push(...filter.keyIds);
  if (filter.status !== undefined) where.push('status = ?'), args.push(filter.status);
  if (filter.statusClass !== undefined) where.push('status >= ? AND status < ?'), args.push(filter.statusClass * 100, filter.statusClass * 100 + 100);
  if (filter.failed) where.push('status >= 400');
  if (filter.method) where.push('method = ?'), args.push(filter.method);
  if (filter.code) where.push('code = ?'), args.push(filter.code);
  if (filter.pathPrefix) where.push('substr(path, 1, ?) = ?'), args.push(filter.pathPrefix.length, filter.pathPrefix);
  if (filter.from) where.push('at >= ?'), args.push(filter.from);
  if (filter.to) where.push('at < ?'), args.push(filter.to);
  const rs = await db.execute({ sql: `SELECT * FROM request_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`, args: [...args, limit] });
  return rs.rows.map((r) => ({
    id: String(r.id),
    account_id: String(r.account_id),
    key_id: String(r.key_id),
    at: String(r.at),
    method: String(r.method),
    path: String(r.path),
    status: Number(r.status),
    code: r.code === null ? null : String(r.code),
    latency_us: Number(r.latency_us),
    receipt_id: r.receipt_id === null ? null : String(r.receipt_id),
    request_id: String(r.request_id),
  }));
}

/** Deletes up to `limit` rows older than `before` (an ISO instant); the count deleted. */
export async function deleteRequestsBefore(tx: Transaction, before: string, limit: number): Promise<number> {
  const rs = await tx.execute({ sql: 'DELETE FROM request_log WHERE id IN (SELECT id FROM request_log WHERE at < ? ORDER BY at LIMIT ?)', args: [before, limit] });
  return rs.rowsAffected;
}

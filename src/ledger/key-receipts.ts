/**
 * Each key's receipts, found in the log without a row per receipt: one row per
 * key and batch (and UTC day), holding the batch's first index of that key and
 * the offsets of the others from it (index-lists.ts).
 *
 * Read newest first, by the dashboard and by a usage figure that starts
 * inside a day (meter.ts); the receipts themselves are read from their tiles.
 */
import { insertRows, type Client, type Transaction } from './sql.ts';
import { indexListRows, unpackIndexes } from './index-lists.ts';
import { readEntriesAt, type Db } from './log.ts';
import { RECEIPTS_LOG, receiptsFromEntries, type Receipt, type ReceiptOpening, type StoredReceipt } from './receipts.ts';

const bytes = (v: unknown): Buffer => Buffer.from(v as ArrayBuffer);

/**
 * Lists the batch's receipts under their keys, one row per key and day. The
 * openings of their commitments ride in the same row (`openings`, JSON by log
 * index): in a table of their own they cost every batch another page rewritten
 * at its commit, which showed as a quarter of pre-finality evaluate's rate.
 */
export async function addKeyReceipts(tx: Transaction, receipts: readonly Receipt[]): Promise<void> {
  const keyed = receipts.filter((r) => r.payload.key_id);
  if (keyed.length === 0) return;
  const listOf = (r: Receipt) => [r.payload.key_id!, r.payload.issued_at.slice(0, 10)] as const;
  const openings = new Map<string, Record<string, StoredOpening[]>>();
  for (const r of keyed) {
    if (!r.openings?.length) continue;
    const id = JSON.stringify(listOf(r));
    const byIndex = openings.get(id) ?? {};
    byIndex[r.log_index] = r.openings.map((o) => [o.field, o.salt, o.value]);
    openings.set(id, byIndex);
  }
  const rows = indexListRows(keyed.map((r) => ({ key: listOf(r), index: r.log_index })));
  await insertRows(
    tx,
    'key_receipts',
    ['key_id', 'day', 'first', 'offsets', 'openings'],
    rows.map((row) => {
      const o = openings.get(JSON.stringify(row.slice(0, 2)));
      return [...row, o ? JSON.stringify(o) : null];
    }),
  );
}

/** An opening as stored: [field, salt, value]. */
type StoredOpening = [string, string, unknown];

/**
 * The openings of the receipt at `index`, issued to `keyId` on UTC `day`, from
 * the row that lists it; [] when it has none there.
 */
export async function keyReceiptOpenings(db: Db, keyId: string, day: string, index: number): Promise<ReceiptOpening[]> {
  const rs = await db.execute({
    sql: 'SELECT openings FROM key_receipts WHERE key_id = ? AND first <= ? AND day = ? ORDER BY first DESC LIMIT 1',
    args: [keyId, index, day],
  });
  const text = rs.rows[0]?.openings;
  if (typeof text !== 'string') return [];
  const stored = (JSON.parse(text) as Record<string, StoredOpening[]>)[index] ?? [];
  return stored.map(([field, salt, value]) => ({ field, salt, value }));
}

/**
 * Every receipts-log index of `keyId` (of every key when undefined) issued on
 * UTC `day`, in log order: live keys' only, since a test key's receipts are
 * entries of the test log and never billed (docs/test-mode.md).
 */
export async function keyReceiptIndexesOn(db: Db, keyId: string | undefined, day: string): Promise<number[]> {
  const live = "key_id IN (SELECT id FROM api_keys WHERE mode = 'live')";
  const rs = keyId
    ? await db.execute({
        sql: `SELECT first, offsets FROM key_receipts WHERE key_id = ? AND day = ? AND ${live} ORDER BY first`,
        args: [keyId, day],
      })
    : await db.execute({ sql: `SELECT first, offsets FROM key_receipts WHERE day = ? AND ${live} ORDER BY first`, args: [day] });
  return rs.rows.flatMap((r) => unpackIndexes(Number(r.first), bytes(r.offsets))).sort((a, b) => a - b);
}

/** Rows of key_receipts read per query while scanning. */
const ROWS_PER_READ = 64;

export interface ScanOptions {
  /** Only receipts before this log index (a cursor). */
  before?: number | undefined;
  /** Only receipts after this log index (the other cursor). */
  after?: number | undefined;
  /** Stop after this many kept receipts. */
  limit: number;
  /** Which receipts to keep (default: all). */
  keep?: ((r: StoredReceipt) => boolean) | undefined;
  /** Stop after examining this many receipts, kept or not, so a rare filter cannot scan a whole history. */
  budget?: number | undefined;
  /** The log the keys' receipts are entries of: the receipts log (default), or the test log for test keys. */
  log?: string | undefined;
}

/**
 * The receipts of `keyIds` (all live, or all test keys: see `opts.log`), newest first, filtered by `keep`. `next` is the
 * cursor to pass as `before` for the next page, or undefined at the end.
 */
export async function scanKeyReceipts(
  db: Client,
  keyIds: readonly string[],
  opts: ScanOptions,
): Promise<{ receipts: StoredReceipt[]; next: number | undefined }> {
  const budget = opts.budget ?? 10_000;
  // Per key, a descending stream of indexes read ROWS_PER_READ rows at a time; merged newest first.
  const streams = keyIds.map((keyId) => ({ keyId, pending: [] as number[], below: opts.before ?? Number.MAX_SAFE_INTEGER, done: false }));
  const refill = async (s: (typeof streams)[number]) => {
    const rs = await db.execute({
      sql: 'SELECT first, offsets FROM key_receipts WHERE key_id = ? AND first < ? ORDER BY first DESC LIMIT ?',
      args: [s.keyId, s.below, ROWS_PER_READ],
    });
    if (rs.rows.length < ROWS_PER_READ) s.done = true;
    const after = opts.after ?? -1;
    for (const r of rs.rows) {
      const first = Number(r.first);
      s.pending.push(...unpackIndexes(first, bytes(r.offsets)).filter((i) => i < (opts.before ?? Number.MAX_SAFE_INTEGER) && i > after));
      s.below = Math.min(s.below, first);
      // Batches follow one another: a row starting at or below `after` is the last with anything newer.
      if (first <= after) s.done = true;
    }
    s.pending.sort((a, b) => b - a);
  };
  const kept: StoredReceipt[] = [];
  let examined = 0;
  let last: number | undefined;
  while (kept.length < opts.limit && examined < budget) {
    for (const s of streams) if (s.pending.length === 0 && !s.done) await refill(s);
    const live = streams.filter((s) => s.pending.length > 0);
    if (live.length === 0) return { receipts: kept, next: undefined };
    // Take a run of the newest indexes across keys, read them from their tiles together.
    const batch: number[] = [];
    while (batch.length < 64 && examined + batch.length < budget) {
      const s = streams.filter((x) => x.pending.length > 0).sort((a, b) => b.pending[0]! - a.pending[0]!)[0];
      if (!s) break;
      // Never go below another stream's unread rows: refill it first.
      const lagging = streams.find((x) => x.pending.length === 0 && !x.done);
      if (lagging) break;
      batch.push(s.pending.shift()!);
    }
    if (batch.length === 0) continue;
    examined += batch.length;
    const log = opts.log ?? RECEIPTS_LOG;
    for (const r of receiptsFromEntries(await readEntriesAt(db, log, batch), log)) {
      last = r.log_index;
      if (opts.keep && !opts.keep(r)) continue;
      kept.push(r);
      if (kept.length === opts.limit) return { receipts: kept, next: r.log_index };
    }
  }
  return { receipts: kept, next: last };
}

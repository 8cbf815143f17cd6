/**
 * Storage per batch (issue 26): every log becomes C2SP tiles, the meter
 * becomes counters, and a receipt stops having a row of its own.
 *
 *   log_entries + log_nodes  ->  logs.edge, log_segments (one per tile, and for
 *                                the receipts log also cut at the last clearing
 *                                boundary), log_tile_hashes
 *   receipts                 ->  receipt_ids_legacy (id -> index, for ids minted
 *                                before the index was in the id), key_receipts
 *   meter                    ->  usage_counters (kept as meter_archive: a usage
 *                                figure that starts inside a day before this
 *                                migration reads its charges there)
 *   key_hops_monthly and api_keys.hops_used/period_start  ->  hop_counters
 *
 * Each log's rebuilt right edge is checked against the stored one of
 * log_nodes: a log whose stored hashes disagree with its entries stops the
 * upgrade, before anything is dropped.
 */
import type { Transaction } from '../sql.ts';
import { leafHash } from '../../crypto/merkle.ts';
import { TILE_HEIGHT, TILE_WIDTH, encodeBundle, extendEdge, packEdge, EMPTY_EDGE, type Edge } from '../../crypto/tiles.ts';
import { summarizeReceipts } from '../acts.ts';
import { INDEX_LIST_MAX, packOffsets } from '../index-lists.ts';
import { receiptFromLeaf, type ReceiptPayload } from '../receipts.ts';
import { periodStart, type HopPeriod } from '../../domain/quota.ts';

const CHUNK = 4096;
const bytes = (v: unknown): Uint8Array => new Uint8Array(v as ArrayBuffer);

export async function up(tx: Transaction): Promise<void> {
  for (const sql of [
    'ALTER TABLE logs ADD COLUMN edge BLOB',
    `CREATE TABLE log_segments (
       log TEXT NOT NULL, start INTEGER NOT NULL, count INTEGER NOT NULL,
       entries BLOB NOT NULL, summary TEXT, created_at TEXT NOT NULL,
       PRIMARY KEY (log, start))`,
    `CREATE TABLE log_tile_hashes (
       log TEXT NOT NULL, level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL,
       PRIMARY KEY (log, level, idx)) WITHOUT ROWID`,
    `CREATE TABLE usage_counters (
       key_id TEXT NOT NULL, day TEXT NOT NULL, sku TEXT NOT NULL, nap INTEGER NOT NULL,
       count INTEGER NOT NULL, usd INTEGER NOT NULL, micros INTEGER NOT NULL,
       PRIMARY KEY (key_id, day, sku)) WITHOUT ROWID`,
    'CREATE TABLE hop_counters (key_id TEXT NOT NULL, day TEXT NOT NULL, hops INTEGER NOT NULL, PRIMARY KEY (key_id, day)) WITHOUT ROWID',
    'CREATE TABLE key_receipts (key_id TEXT NOT NULL, day TEXT NOT NULL, first INTEGER NOT NULL, offsets BLOB NOT NULL, PRIMARY KEY (key_id, first)) WITHOUT ROWID',
    'CREATE INDEX key_receipts_by_day ON key_receipts (day, key_id)',
    'CREATE TABLE receipt_ids_legacy (id TEXT PRIMARY KEY, log_index INTEGER NOT NULL) WITHOUT ROWID',
  ]) {
    await tx.execute(sql);
  }
  const clearingCut = Number((await tx.execute('SELECT COALESCE(MAX(receipts_to), 0) AS n FROM clearing_checkpoints')).rows[0]!.n);
  const logs = await tx.execute('SELECT name, size FROM logs ORDER BY name');
  for (const l of logs.rows) await convertLog(tx, String(l.name), Number(l.size), l.name === 'receipts' ? clearingCut : -1);
  await convertReceipts(tx);
  await convertMeter(tx);
  await convertHops(tx);
  for (const sql of [
    'DROP TABLE log_entries',
    'DROP TABLE log_nodes',
    'DROP TABLE receipts',
    'DROP TABLE key_hops_monthly',
    'ALTER TABLE api_keys DROP COLUMN hops_used',
    'ALTER TABLE api_keys DROP COLUMN period_start',
    'ALTER TABLE meter RENAME TO meter_archive',
  ]) {
    await tx.execute(sql);
  }
}

/** Rewrites one log's entries as segments, checking the rebuilt edge against log_nodes. */
async function convertLog(tx: Transaction, log: string, size: number, cut: number): Promise<void> {
  let edge: Edge = EMPTY_EDGE;
  let pending: Array<{ leaf: Uint8Array; created_at: string }> = [];
  const flush = async () => {
    if (pending.length === 0) return;
    const start = edge.size - pending.length;
    const leaves = pending.map((p) => p.leaf);
    const summary = log === 'receipts' ? await receiptsSummary(tx, leaves) : null;
    await tx.execute({
      sql: 'INSERT INTO log_segments (log, start, count, entries, summary, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      args: [log, start, pending.length, encodeBundle(leaves), summary, pending[pending.length - 1]!.created_at],
    });
    pending = [];
  };
  for (let from = 0; from < size; from += CHUNK) {
    const rs = await tx.execute({
      sql: 'SELECT idx, leaf, created_at FROM log_entries WHERE log = ? AND idx >= ? AND idx < ? ORDER BY idx',
      args: [log, from, from + CHUNK],
    });
    for (const r of rs.rows) {
      const index = Number(r.idx);
      if (index !== edge.size) throw new Error(`log ${log} has no entry ${edge.size}: the upgrade stops before anything is dropped`);
      if (pending.length > 0 && (index % TILE_WIDTH === 0 || index === cut)) await flush();
      const leaf = bytes(r.leaf);
      const next = extendEdge(edge, leafHash(leaf));
      for (const c of next.completed) {
        if (c.level % TILE_HEIGHT === 0) {
          await tx.execute({
            sql: 'INSERT INTO log_tile_hashes (log, level, idx, hash) VALUES (?, ?, ?, ?)',
            args: [log, c.level / TILE_HEIGHT, c.index, c.hash],
          });
        }
      }
      edge = next.edge;
      pending.push({ leaf, created_at: String(r.created_at) });
    }
  }
  await flush();
  if (edge.size !== size)
    throw new Error(`log ${log} holds ${edge.size} entries, not its size ${size}: the upgrade stops before anything is dropped`);
  await checkEdge(tx, log, edge);
  await tx.execute({ sql: 'UPDATE logs SET edge = ? WHERE name = ?', args: [packEdge(edge), log] });
}

/** The stored perfect subtrees of the old layout (keyed by where their span ends) must be the rebuilt edge. */
async function checkEdge(tx: Transaction, log: string, edge: Edge): Promise<void> {
  let lo = 0;
  let k = 0;
  for (let level = 60; level >= 0; level--) {
    if (Math.floor(edge.size / 2 ** level) % 2 === 0) continue;
    const spanEnd = lo + 2 ** level;
    const rs = await tx.execute({
      sql: 'SELECT hash FROM log_nodes WHERE log = ? AND span_end = ? AND level = ?',
      args: [log, spanEnd, level],
    });
    const stored = rs.rows[0] ? Buffer.from(bytes(rs.rows[0].hash)) : undefined;
    if (!stored || !stored.equals(Buffer.from(edge.hashes[k]!))) {
      throw new Error(
        `log ${log}: the stored hash of node ${level}/${lo / 2 ** level} does not match its entries; the upgrade stops before anything is dropped`,
      );
    }
    lo = spanEnd;
    k++;
  }
}

/** The clearing summary of legacy receipts: acts from their payloads, charges from the meter rows naming them. */
async function receiptsSummary(tx: Transaction, leaves: readonly Uint8Array[]): Promise<string> {
  const payloads: ReceiptPayload[] = leaves.map((l) => receiptFromLeaf(Buffer.from(l).toString('utf8')).payload);
  const rs = await tx.execute({
    sql: 'SELECT ref, sku, amount_micros, nap FROM meter WHERE ref IN (SELECT value FROM json_each(?)) ORDER BY rowid',
    args: [JSON.stringify(payloads.map((p) => p.receipt_id))],
  });
  const byRef = new Map<string, NonNullable<ReceiptPayload['charges']>>();
  for (const r of rs.rows) {
    const list = byRef.get(String(r.ref)) ?? [];
    list.push({ sku: String(r.sku), amount_micros: Number(r.amount_micros), ...(Number(r.nap) ? { nap: true } : {}) });
    byRef.set(String(r.ref), list);
  }
  return summarizeReceipts(payloads.map((p) => ({ payload: { ...p, charges: byRef.get(p.receipt_id) ?? [] } })));
}

async function convertReceipts(tx: Transaction): Promise<void> {
  await tx.execute('INSERT INTO receipt_ids_legacy (id, log_index) SELECT id, log_index FROM receipts ORDER BY id');
  const rs = await tx.execute(
    'SELECT key_id, substr(created_at, 1, 10) AS day, log_index FROM receipts WHERE key_id IS NOT NULL ORDER BY key_id, log_index',
  );
  let group: { keyId: string; day: string; indexes: number[] } | undefined;
  const flush = async () => {
    if (!group) return;
    await tx.execute({
      sql: 'INSERT INTO key_receipts (key_id, day, first, offsets) VALUES (?, ?, ?, ?)',
      args: [group.keyId, group.day, group.indexes[0]!, packOffsets(group.indexes)],
    });
    group = undefined;
  };
  for (const r of rs.rows) {
    const keyId = String(r.key_id);
    const day = String(r.day);
    if (!group || group.keyId !== keyId || group.day !== day || group.indexes.length === INDEX_LIST_MAX) await flush();
    group ??= { keyId, day, indexes: [] };
    group.indexes.push(Number(r.log_index));
  }
  await flush();
}

async function convertMeter(tx: Transaction): Promise<void> {
  await tx.execute(`INSERT INTO usage_counters (key_id, day, sku, nap, count, usd, micros)
    SELECT key_id, substr(created_at, 1, 10), sku, MAX(nap), COUNT(*), SUM(amount_micros / 1000000), SUM(amount_micros % 1000000)
    FROM meter GROUP BY key_id, substr(created_at, 1, 10), sku`);
  await tx.execute('UPDATE usage_counters SET usd = usd + micros / 1000000, micros = micros % 1000000');
}

/**
 * Monthly hop counts land on each month's first day. A key whose count for its
 * current period was higher than the counters now give (hops made before the
 * monthly counts existed) gets the difference today: no key gains hops.
 */
async function convertHops(tx: Transaction): Promise<void> {
  await tx.execute("INSERT INTO hop_counters (key_id, day, hops) SELECT key_id, month || '-01', hops FROM key_hops_monthly WHERE hops > 0");
  const now = new Date();
  const today = now.toISOString().slice(0, 10);
  const keys = await tx.execute('SELECT id, hops_used, hop_period, period_start FROM api_keys WHERE hops_used > 0');
  for (const k of keys.rows) {
    const id = String(k.id);
    const period = String(k.hop_period) as HopPeriod;
    const start = periodStart(period, now);
    if (String(k.period_start ?? '') !== start) continue;
    const counted = await tx.execute({
      sql: 'SELECT COALESCE(SUM(hops), 0) AS n FROM hop_counters WHERE key_id = ? AND day >= ?',
      args: [id, start.slice(0, 10)],
    });
    const missing = Number(k.hops_used) - Number(counted.rows[0]!.n);
    if (missing > 0) {
      await tx.execute({
        sql: 'INSERT INTO hop_counters (key_id, day, hops) VALUES (?, ?, ?) ON CONFLICT (key_id, day) DO UPDATE SET hops = hops + excluded.hops',
        args: [id, today, missing],
      });
    }
  }
}

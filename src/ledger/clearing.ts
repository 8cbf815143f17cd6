/**
 * Clearing checkpoints: a Merkle net attestation over the governed acts of a
 * period, appended to the `clearing` log. A period is a range of the receipts
 * log, [end of the previous checkpoint, receipts tree size at sealing): exact,
 * gap-free, and checkable by anyone against the receipts log.
 */
import type { Transaction } from './sql.ts';
import { leafHash, rootOf } from '../crypto/merkle.ts';
import { formatUsd } from '../catalog/money.ts';
import { newId } from '../ids.ts';
import { leafBytes } from './astl.ts';
import { RECEIPTS_LOG } from './receipts.ts';
import { appendLeaf, firstAppendAt, segmentSummaries, treeHead, type Db } from './log.ts';
import type { SegmentSummary } from './acts.ts';
import { base64 as b64 } from '../crypto/base64.ts';

export const CLEARING_LOG = 'clearing';

export interface SkuTotal {
  sku: string;
  nap: boolean;
  count: number;
  /** Decimal integer text: exact at any size (a JSON number would not be past 2^53). */
  amount_micros: string;
  amount_usd: string;
}

/** The leaf of a clearing checkpoint (its canonical JSON). */
export interface ClearingAttestation {
  type: 'clearing.network';
  checkpoint_id: string;
  period_start: string;
  period_end: string;
  receipts: {
    origin_log: 'receipts';
    /** Receipts log indexes [from, to) this checkpoint covers. */
    from: number;
    to: number;
    /** Root (base64) of the receipts log at size `to`. */
    tree_root: string;
    /** Governed acts in the range, per receipt kind and decision (recountable from the log's entries). */
    acts: Array<{ kind: string; decision: string; count: number }>;
  };
  /** Meter totals of the acts in the range, per SKU. */
  per_sku: SkuTotal[];
  total_usd: string;
  /** RFC 9162 root (base64) over the canonical JSON of each per_sku entry, in order: the net. */
  net_root: string;
}

export async function latestClearing(
  db: Db,
): Promise<{ id: string; log_index: number; receipts_to: number; period_end: string } | undefined> {
  const rs = await db.execute('SELECT id, log_index, receipts_to, period_end FROM clearing_checkpoints ORDER BY log_index DESC LIMIT 1');
  const r = rs.rows[0];
  return r
    ? { id: String(r.id), log_index: Number(r.log_index), receipts_to: Number(r.receipts_to), period_end: String(r.period_end) }
    : undefined;
}

/** When the first receipt was issued, or undefined before any: where the first clearing period starts. */
export function firstReceiptAt(db: Db): Promise<string | undefined> {
  return firstAppendAt(db, RECEIPTS_LOG);
}

/**
 * Acts and charges of receipts [from, to), summed from the summaries stored
 * with each segment of the log (ledger/acts.ts). Both ends are batch
 * boundaries: a clearing seals in a transaction of its own, at the log's size.
 */
async function rangeTotals(
  db: Db,
  from: number,
  to: number,
): Promise<{ acts: Map<string, number>; skus: Map<string, { count: number; micros: bigint; nap: boolean }> }> {
  const acts = new Map<string, number>();
  const skus = new Map<string, { count: number; micros: bigint; nap: boolean }>();
  for (const text of await segmentSummaries(db, RECEIPTS_LOG, from, to)) {
    const s = JSON.parse(text) as SegmentSummary;
    for (const [act, n] of Object.entries(s.acts)) acts.set(act, (acts.get(act) ?? 0) + n);
    for (const [sku, [count, micros, nap]] of Object.entries(s.skus)) {
      const t = skus.get(sku) ?? { count: 0, micros: 0n, nap: false };
      skus.set(sku, { count: t.count + count, micros: t.micros + BigInt(micros), nap: t.nap || nap });
    }
  }
  return { acts, skus };
}

const byKey = <T>(m: Map<string, T>): Array<[string, T]> => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Seals the period since the last checkpoint, inside the caller's write transaction. */
export async function sealClearing(tx: Transaction, now: Date): Promise<{ attestation: ClearingAttestation; index: number }> {
  const prev = await latestClearing(tx);
  const from = prev?.receipts_to ?? 0;
  const head = await treeHead(tx, RECEIPTS_LOG);
  const to = head.size;
  const periodStart = prev?.period_end || (await firstReceiptAt(tx)) || now.toISOString();
  const totals = await rangeTotals(tx, from, to);
  let total = 0n;
  const per_sku: SkuTotal[] = byKey(totals.skus).map(([sku, t]) => {
    total += t.micros;
    return { sku, nap: t.nap, count: t.count, amount_micros: t.micros.toString(), amount_usd: formatUsd(t.micros) };
  });
  const attestation: ClearingAttestation = {
    type: 'clearing.network',
    checkpoint_id: newId('clr'),
    period_start: periodStart,
    period_end: now.toISOString(),
    receipts: {
      origin_log: 'receipts',
      from,
      to,
      tree_root: b64(head.root),
      acts: byKey(totals.acts).map(([act, count]) => {
        const [kind, decision] = act.split(' ') as [string, string];
        return { kind, decision, count };
      }),
    },
    per_sku,
    total_usd: formatUsd(total),
    net_root: b64(rootOf(per_sku.map((s) => leafHash(leafBytes(s))))),
  };
  const { index } = await appendLeaf(tx, CLEARING_LOG, leafBytes(attestation));
  await tx.execute({
    sql: 'INSERT INTO clearing_checkpoints (id, log_index, receipts_from, receipts_to, period_start, period_end, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [attestation.checkpoint_id, index, from, to, attestation.period_start, attestation.period_end, attestation.period_end],
  });
  return { attestation, index };
}

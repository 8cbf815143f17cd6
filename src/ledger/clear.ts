/** Clear acts and cleared exposure (SPEC 2.4). Amounts are micro-USD; sums are read exactly as text. */
import type { Client, Transaction } from './sql.ts';
import { exactSum, exactSumSql } from './exact-sum.ts';
import { insertRows } from './log.ts';
import { exposureFeeMicros, tierFor, type BpsTier } from '../domain/clear.ts';

export interface ClearActRow {
  receiptId: string;
  keyId: string;
  vertical: string;
  fuseId: string;
  decision: string;
  exposureMicros: number;
  month: string;
  createdAt: string;
}

/** Multi-row: an act declares its row among its writes (records.ts), written with its group's. */
export async function insertClearActs(tx: Transaction, rows: readonly ClearActRow[]): Promise<void> {
  await insertRows(
    tx,
    'INSERT INTO clear_acts (receipt_id, key_id, vertical, fuse_id, decision, exposure_micros, month, created_at) VALUES',
    '(?, ?, ?, ?, ?, ?, ?, ?)',
    rows.map((a) => [a.receiptId, a.keyId, a.vertical, a.fuseId, a.decision, a.exposureMicros, a.month, a.createdAt]),
  );
}

/** Decisions whose exposure is cleared: a PERMIT of the execute gate, a GO of pre-finality. */
export const CLEARING_DECISIONS = ['PERMIT', 'GO'] as const;

export interface MonthTotals {
  /** Cleared (PERMIT and GO) exposure, micro-USD. */
  cleared_micros: bigint;
  /** Acts by decision. */
  by_decision: Record<string, number>;
  acts: number;
  keys: number;
}

/** Totals of one month, for one key or (keyId undefined) the whole network. */
export async function monthTotals(db: Client | Transaction, month: string, keyId?: string): Promise<MonthTotals> {
  const where = keyId ? 'month = ? AND key_id = ?' : 'month = ?';
  const args = keyId ? [month, keyId] : [month];
  const rs = await db.execute({
    sql: `SELECT decision, COUNT(*) AS n, ${exactSumSql('exposure_micros', 'exposure')}
          FROM clear_acts WHERE ${where} GROUP BY decision`,
    args,
  });
  const keys = await db.execute({ sql: `SELECT COUNT(DISTINCT key_id) AS k FROM clear_acts WHERE ${where}`, args });
  const by_decision: Record<string, number> = { PERMIT: 0, DENY: 0, HOLD: 0, SILENCE: 0, GO: 0 };
  let cleared = 0n;
  let acts = 0;
  for (const r of rs.rows) {
    const d = String(r.decision);
    by_decision[d] = Number(r.n);
    acts += Number(r.n);
    if ((CLEARING_DECISIONS as readonly string[]).includes(d)) cleared += exactSum(r, 'exposure');
  }
  return { cleared_micros: cleared, by_decision, acts, keys: Number(keys.rows[0]?.k ?? 0) };
}

/** A key's bps fee on the cleared exposure of one UTC month (SPEC 1, 2.4), graduated over the Clear tiers. */
export interface MonthClearBps {
  month: string;
  cleared_micros: bigint;
  /** The tier the month's cleared USD reaches (its last dollar's). */
  tier: BpsTier & { label: string };
  /** The graduated fee, whole cents. */
  fee_micros: bigint;
}

/** The month's bps fee of a key, as of now: what its checkout bills as `clear_bps` (docs/pricing.md). */
export async function monthClearBps(db: Client | Transaction, keyId: string, month: string): Promise<MonthClearBps> {
  const t = await monthTotals(db, month, keyId);
  return { month, cleared_micros: t.cleared_micros, tier: tierFor(t.cleared_micros), fee_micros: exposureFeeMicros(t.cleared_micros) };
}

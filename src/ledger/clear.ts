/**
 * Clear acts and cleared exposure (SPEC 2.4), kept as counters per (UTC month,
 * key, decision). Amounts are micro-USD, stored as whole USD plus a micro
 * remainder and read back exactly as text (exact-sum.ts says why).
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';
import { addUsdMicros, SUM_USD_MICROS, toUsdMicros, usdMicrosSum } from './exact-sum.ts';
import { exposureFeeMicros, monthOf, tierFor, type BpsTier } from '../domain/clear.ts';

/** What one act adds to its month's clear counters. */
export interface ClearActRow {
  keyId: string;
  decision: string;
  exposureMicros: number;
  /** When the act was made: its UTC month is the counter's. */
  at: Date;
}

/**
 * Adds a group's acts to the clear counters (an act declares its row among its
 * writes, records.ts): one upsert row per (month, key, decision) of the group.
 */
export async function addClearActs(tx: Transaction, rows: readonly ClearActRow[]): Promise<void> {
  const sums = new Map<string, { month: string; keyId: string; decision: string; acts: number; micros: bigint }>();
  for (const a of rows) {
    const month = monthOf(a.at);
    const k = `${month} ${a.keyId} ${a.decision}`;
    const s = sums.get(k) ?? { month, keyId: a.keyId, decision: a.decision, acts: 0, micros: 0n };
    s.acts++;
    s.micros += BigInt(a.exposureMicros);
    sums.set(k, s);
  }
  await insertRows(
    tx,
    'clear_counters',
    ['month', 'key_id', 'decision', 'acts', 'usd', 'micros'],
    [...sums.values()].map((s) => [s.month, s.keyId, s.decision, s.acts, ...toUsdMicros(s.micros)]),
    ` ON CONFLICT (month, key_id, decision) DO UPDATE SET acts = clear_counters.acts + excluded.acts, ${addUsdMicros('clear_counters')}`,
  );
}

/** An execute-gate answer or a pre-finality GO, added to its month's clear counters. Written with its group's records (records.ts). */
export const CLEAR_COUNTERS: RecordWriter<ClearActRow> = recordWriter('clear_counters', addClearActs);

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
    sql: `SELECT decision, SUM(acts) AS n, ${SUM_USD_MICROS}
          FROM clear_counters WHERE ${where} GROUP BY decision`,
    args,
  });
  const keys = await db.execute({ sql: `SELECT COUNT(DISTINCT key_id) AS k FROM clear_counters WHERE ${where}`, args });
  const by_decision: Record<string, number> = { PERMIT: 0, DENY: 0, HOLD: 0, SILENCE: 0, GO: 0 };
  let cleared = 0n;
  let acts = 0;
  for (const r of rs.rows) {
    const d = String(r.decision);
    by_decision[d] = Number(r.n);
    acts += Number(r.n);
    if ((CLEARING_DECISIONS as readonly string[]).includes(d)) cleared += usdMicrosSum(r);
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

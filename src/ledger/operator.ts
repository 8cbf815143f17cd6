/**
 * Operator checkout persistence: hops per key and month, the month's charges,
 * and the one checkout row per key and closed month. Decides nothing (the
 * formula is domain/pricing.ts operatorCheckout).
 */
import type { Client, Transaction } from './sql.ts';
import type { OperatorCheckout } from '../domain/pricing.ts';
import { exactSum, exactSumSql } from './exact-sum.ts';
import { insertRows } from './log.ts';

type Db = Client | Transaction;

export const CHECKOUT_SKU = 'operator_checkout';
/** The month's bps fee on cleared exposure, billed by the month's checkout beside its true-up. */
export const CLEAR_BPS_SKU = 'clear_bps';

/** Adds hops to each key's count for the UTC month of `now` (written where the hop quota is counted, api-keys.ts). */
export async function addMonthlyHops(tx: Transaction, counts: ReadonlyArray<{ keyId: string; hops: number }>, now: Date): Promise<void> {
  const month = now.toISOString().slice(0, 7);
  await insertRows(
    tx,
    'INSERT INTO key_hops_monthly (key_id, month, hops) VALUES',
    '(?, ?, ?)',
    counts.map((c) => [c.keyId, month, c.hops]),
    ' ON CONFLICT (key_id, month) DO UPDATE SET hops = hops + excluded.hops',
  );
}

export async function monthHops(db: Db, keyId: string, month: string): Promise<number> {
  const rs = await db.execute({ sql: 'SELECT hops FROM key_hops_monthly WHERE key_id = ? AND month = ?', args: [keyId, month] });
  return rs.rows[0] ? Number(rs.rows[0].hops) : 0;
}

/** The key's per-act charges of a UTC month (the lines of a checkout, written in a later month, excluded), micro-USD. */
export async function monthCharged(db: Db, keyId: string, month: string): Promise<bigint> {
  const rs = await db.execute({
    sql: `SELECT ${exactSumSql('amount_micros', 'm')} FROM meter WHERE key_id = ? AND substr(created_at, 1, 7) = ? AND sku NOT IN (?, ?)`,
    args: [keyId, month, CHECKOUT_SKU, CLEAR_BPS_SKU],
  });
  return exactSum(rs.rows[0]!, 'm');
}

export interface CheckoutRow extends OperatorCheckout {
  keyId: string;
  month: string;
  hops: number;
  exposureMicros: bigint;
  /** The month's graduated bps fee on its cleared exposure, and the tier it reached. */
  clearBpsMicros: bigint;
  clearTier: string | null;
  receiptId: string;
  createdAt: string;
}

/** Writes the checkout of a month; false when the month was already checked out. */
export async function insertCheckout(tx: Transaction, c: CheckoutRow): Promise<boolean> {
  const rs = await tx.execute({
    sql: `INSERT INTO operator_checkouts (key_id, month, floor_micros, bps_micros, per_hop_micros, basis, due_micros, charged_micros, amount_micros, hops, exposure_micros, clear_bps_micros, clear_tier, receipt_id, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key_id, month) DO NOTHING`,
    args: [c.keyId, c.month, c.floorMicros, c.bpsMicros, c.perHopMicros, c.basis, c.dueMicros, c.chargedMicros, c.checkoutMicros, c.hops, c.exposureMicros, c.clearBpsMicros, c.clearTier, c.receiptId, c.createdAt],
  });
  return rs.rowsAffected === 1;
}

export async function getCheckout(db: Db, keyId: string, month: string): Promise<CheckoutRow | undefined> {
  const rs = await db.execute({ sql: 'SELECT * FROM operator_checkouts WHERE key_id = ? AND month = ?', args: [keyId, month] });
  const r = rs.rows[0];
  if (!r) return undefined;
  const big = (v: unknown) => BigInt(String(v));
  return {
    keyId,
    month,
    floorMicros: big(r.floor_micros),
    bpsMicros: big(r.bps_micros),
    perHopMicros: big(r.per_hop_micros),
    basis: String(r.basis) as CheckoutRow['basis'],
    dueMicros: big(r.due_micros),
    chargedMicros: big(r.charged_micros),
    checkoutMicros: big(r.amount_micros),
    hops: Number(r.hops),
    exposureMicros: big(r.exposure_micros),
    clearBpsMicros: big(r.clear_bps_micros),
    clearTier: r.clear_tier === null ? null : String(r.clear_tier),
    receiptId: String(r.receipt_id),
    createdAt: String(r.created_at),
  };
}

/**
 * Operator checkout persistence: a key's hops of a month, the month's charges,
 * and the one checkout row per key and closed month. Decides nothing (the
 * formula is domain/pricing.ts operatorCheckout).
 */
import type { Client, Transaction } from './sql.ts';
import type { OperatorCheckout } from '../domain/pricing.ts';
import { counterTotals } from './meter.ts';

type Db = Client | Transaction;

export const CHECKOUT_SKU = 'operator_checkout';
/** The month's bps fee on cleared exposure, billed by the month's checkout beside its true-up. */
export const CLEAR_BPS_SKU = 'clear_bps';

/** The key's hops of a UTC month (`YYYY-MM`), from the hop counters its quota counts with (api-keys.ts). */
export async function monthHops(db: Db, keyId: string, month: string): Promise<number> {
  const rs = await db.execute({
    sql: 'SELECT COALESCE(SUM(hops), 0) AS n FROM hop_counters WHERE key_id = ? AND day >= ? AND day < ?',
    args: [keyId, `${month}-01`, `${month}-32`],
  });
  return Number(rs.rows[0]!.n);
}

/** The key's per-act charges of a UTC month (the lines of a checkout, written in a later month, excluded), micro-USD. */
export async function monthCharged(db: Db, keyId: string, month: string): Promise<bigint> {
  const rows = await counterTotals(db, 'key_id = ? AND day >= ? AND day < ? AND sku NOT IN (?, ?)', [
    keyId,
    `${month}-01`,
    `${month}-32`,
    CHECKOUT_SKU,
    CLEAR_BPS_SKU,
  ]);
  return rows.reduce((s, r) => s + r.micros, 0n);
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
    args: [
      c.keyId,
      c.month,
      c.floorMicros,
      c.bpsMicros,
      c.perHopMicros,
      c.basis,
      c.dueMicros,
      c.chargedMicros,
      c.checkoutMicros,
      c.hops,
      c.exposureMicros,
      c.clearBpsMicros,
      c.clearTier,
      c.receiptId,
      c.createdAt,
    ],
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

/**
 * The meter: one row per charge, written in the same transaction as the act it
 * charges for. Amounts are integer micro-USD.
 */
import type { Client, Transaction } from './sql.ts';
import { MAX_CHARGE_MICROS, formatUsd } from '../domain/money.ts';
import { nowIso } from '../ids.ts';
import { exactSum, exactSumSql } from './exact-sum.ts';
import { insertRows } from './log.ts';

export interface Charge {
  keyId: string;
  sku: string;
  /** Never above MAX_CHARGE_MICROS: routes bound their inputs so that no charge can pass it. */
  amountMicros: number | bigint;
  /** True for negative-act premium SKUs (refusals). */
  nap?: boolean;
  /**
   * The receipt of the act charged for. Every charge has one: a clearing
   * attestation covers the charges of its period through their receipts.
   */
  ref: string;
}

/** Writes charges inside the caller's write transaction, in one multi-row statement per 200. */
export async function recordCharges(tx: Transaction, charges: readonly Charge[]): Promise<void> {
  if (charges.length === 0) return;
  const now = nowIso();
  for (const c of charges) checkCharge(c);
  await insertRows(
    tx,
    'INSERT INTO meter (key_id, sku, amount_micros, nap, ref, created_at) VALUES',
    '(?, ?, ?, ?, ?, ?)',
    charges.map((c) => [c.keyId, c.sku, BigInt(c.amountMicros), c.nap ? 1 : 0, c.ref, now]),
  );
}

/** A route that let an input push a charge past the bound has a bug: refuse the write rather than store it. */
export function checkCharge(c: Pick<Charge, 'sku' | 'amountMicros'>): void {
  const amount = BigInt(c.amountMicros);
  if (amount < 0n || amount > MAX_CHARGE_MICROS) throw new RangeError(`charge ${amount} micro-USD for ${c.sku} is outside 0..${MAX_CHARGE_MICROS}`);
}

export interface SkuUsage {
  sku: string;
  count: number;
  nap: boolean;
  amount_usd: string;
}

export interface Usage {
  by_sku: SkuUsage[];
  total_usd: string;
  nap_usd: string;
  /** The same totals, exact, for arithmetic (not rendered). */
  total_micros: bigint;
  nap_micros: bigint;
}

/** Usage per SKU for one key (or for every key when keyId is undefined), optionally since a time. */
export async function usage(db: Client, keyId?: string, since?: string): Promise<Usage> {
  const where: string[] = [];
  const args: string[] = [];
  if (keyId) {
    where.push('key_id = ?');
    args.push(keyId);
  }
  if (since) {
    where.push('created_at >= ?');
    args.push(since);
  }
  const rs = await db.execute({
    sql: `SELECT sku, MAX(nap) AS nap, COUNT(*) AS n, ${exactSumSql('amount_micros', 'micros')} FROM meter
          ${where.length ? 'WHERE ' + where.join(' AND ') : ''} GROUP BY sku ORDER BY sku`,
    args,
  });
  let total = 0n;
  let nap = 0n;
  const by_sku = rs.rows.map((r) => {
    const micros = exactSum(r, 'micros');
    total += micros;
    if (Number(r.nap)) nap += micros;
    return { sku: String(r.sku), count: Number(r.n), nap: Number(r.nap) === 1, amount_usd: formatUsd(micros) };
  });
  return { by_sku, total_usd: formatUsd(total), nap_usd: formatUsd(nap), total_micros: total, nap_micros: nap };
}

/**
 * The meter: one row per charge, written in the same transaction as the act it
 * charges for. Amounts are integer micro-USD.
 */
import type { Client, Transaction } from '@libsql/client';
import { formatUsd } from '../domain/money.ts';
import { nowIso } from '../ids.ts';

export interface Charge {
  keyId: string;
  sku: string;
  amountMicros: number;
  /** True for negative-act premium SKUs (refusals). */
  nap?: boolean;
  /**
   * The receipt of the act charged for. Every charge has one: a clearing
   * attestation covers the charges of its period through their receipts.
   */
  ref: string;
}

export async function recordCharge(tx: Transaction, c: Charge): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO meter (key_id, sku, amount_micros, nap, ref, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [c.keyId, c.sku, c.amountMicros, c.nap ? 1 : 0, c.ref, nowIso()],
  });
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
    sql: `SELECT sku, MAX(nap) AS nap, COUNT(*) AS n, SUM(amount_micros) AS micros FROM meter
          ${where.length ? 'WHERE ' + where.join(' AND ') : ''} GROUP BY sku ORDER BY sku`,
    args,
  });
  let total = 0;
  let nap = 0;
  const by_sku = rs.rows.map((r) => {
    const micros = Number(r.micros);
    total += micros;
    if (Number(r.nap)) nap += micros;
    return { sku: String(r.sku), count: Number(r.n), nap: Number(r.nap) === 1, amount_usd: formatUsd(micros) };
  });
  return { by_sku, total_usd: formatUsd(total), nap_usd: formatUsd(nap) };
}

/**
 * The meter: usage counters per (key, UTC day, SKU), added to once per batch
 * from the charges the batch's receipts state (ledger/acts.ts). Amounts are
 * integer micro-USD, kept as whole USD plus a micro remainder so that no sum
 * overflows SQLite's 64-bit integers (exact-sum.ts). A figure that starts
 * inside a day adds that day's receipts from the log.
 */
import { insertRows, type Client, type Transaction } from './sql.ts';
import type { InArgs } from '@libsql/client';
import { MAX_CHARGE_MICROS, formatUsd } from '../catalog/money.ts';
import { addUsdMicros, SUM_USD_MICROS, toUsdMicros, usdMicrosSum } from './exact-sum.ts';
import { readEntriesAt } from './log.ts';
import { keyReceiptIndexesOn } from './key-receipts.ts';
import { RECEIPTS_LOG, receiptsFromEntries, type Receipt } from './receipts.ts';

/** A route that let an input push a charge past the bound has a bug: refuse the write rather than store it. */
export function checkCharge(c: { sku: string; amountMicros: number | bigint }): void {
  const amount = BigInt(c.amountMicros);
  if (amount < 0n || amount > MAX_CHARGE_MICROS)
    throw new RangeError(`charge ${amount} micro-USD for ${c.sku} is outside 0..${MAX_CHARGE_MICROS}`);
}

/** The UTC day of an RFC 3339 instant. */
export const dayOf = (iso: string): string => iso.slice(0, 10);

/** Adds the charges the receipts state to their keys' counters: one upsert row per (key, day, SKU). */
export async function addToCounters(tx: Transaction, receipts: readonly Receipt[]): Promise<void> {
  const sums = new Map<string, { keyId: string; day: string; sku: string; nap: boolean; count: number; micros: bigint }>();
  for (const r of receipts) {
    for (const c of r.payload.charges ?? []) {
      const keyId = r.payload.key_id!;
      const day = dayOf(r.payload.issued_at);
      const k = `${keyId} ${day} ${c.sku}`;
      const s = sums.get(k) ?? { keyId, day, sku: c.sku, nap: false, count: 0, micros: 0n };
      s.count++;
      s.micros += BigInt(c.amount_micros);
      s.nap ||= c.nap === true;
      sums.set(k, s);
    }
  }
  await insertRows(
    tx,
    'usage_counters',
    ['key_id', 'day', 'sku', 'nap', 'count', 'usd', 'micros'],
    [...sums.values()].map((s) => [s.keyId, s.day, s.sku, s.nap ? 1 : 0, s.count, ...toUsdMicros(s.micros)]),
    ` ON CONFLICT (key_id, day, sku) DO UPDATE SET nap = CASE WHEN excluded.nap > usage_counters.nap THEN excluded.nap ELSE usage_counters.nap END,
       count = usage_counters.count + excluded.count, ${addUsdMicros('usage_counters')}`,
  );
}

/** Counter totals per SKU. */
export interface SkuTotals {
  sku: string;
  nap: boolean;
  count: number;
  micros: bigint;
}

/** Counter totals per SKU of the rows matching `where` (SQL over usage_counters' columns). */
export async function counterTotals(db: Client | Transaction, where: string, args: InArgs): Promise<SkuTotals[]> {
  const rs = await db.execute({
    sql: `SELECT sku, MAX(nap) AS nap, SUM(count) AS n, ${SUM_USD_MICROS}
          FROM usage_counters ${where ? `WHERE ${where}` : ''} GROUP BY sku ORDER BY sku`,
    args,
  });
  return rs.rows.map((r) => ({ sku: String(r.sku), nap: Number(r.nap) === 1, count: Number(r.n), micros: usdMicrosSum(r) }));
}

/** Per-SKU totals merged (same SKU added). */
export function mergeTotals(...lists: ReadonlyArray<readonly SkuTotals[]>): SkuTotals[] {
  const out = new Map<string, SkuTotals>();
  for (const t of lists.flat()) {
    const o = out.get(t.sku);
    out.set(t.sku, o ? { sku: t.sku, nap: o.nap || t.nap, count: o.count + t.count, micros: o.micros + t.micros } : { ...t });
  }
  return [...out.values()].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0));
}

/** The totals of the receipts of `keyId` (every key when undefined) issued on UTC `day` at or after `since`, read from the log. */
async function totalsFromLog(db: Client, keyId: string | undefined, day: string, since: string): Promise<SkuTotals[]> {
  const indexes = await keyReceiptIndexesOn(db, keyId, day);
  const totals: SkuTotals[] = [];
  for (const r of receiptsFromEntries(await readEntriesAt(db, RECEIPTS_LOG, indexes))) {
    if (r.payload.issued_at < since) continue;
    for (const c of r.payload.charges ?? []) totals.push({ sku: c.sku, nap: c.nap === true, count: 1, micros: BigInt(c.amount_micros) });
  }
  return mergeTotals(totals);
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

/**
 * Usage per SKU for one key (or for every key when keyId is undefined),
 * optionally since an instant: whole days from the counters, and when `since`
 * falls inside a day, that day's receipts from `since` on from the log.
 */
export async function usage(db: Client, keyId?: string, since?: string): Promise<Usage> {
  const where: string[] = [];
  const args: string[] = [];
  if (keyId) {
    where.push('key_id = ?');
    args.push(keyId);
  }
  let partial: SkuTotals[] = [];
  if (since) {
    const instant = new Date(since).toISOString();
    const day = dayOf(instant);
    if (instant === `${day}T00:00:00.000Z`) {
      where.push('day >= ?');
      args.push(day);
    } else {
      where.push('day > ?');
      args.push(day);
      partial = await totalsFromLog(db, keyId, day, instant);
    }
  }
  const rows = mergeTotals(await counterTotals(db, where.join(' AND '), args), partial);
  return usageOf(rows);
}

export function usageOf(rows: readonly SkuTotals[]): Usage {
  let total = 0n;
  let nap = 0n;
  const by_sku = rows.map((r) => {
    total += r.micros;
    if (r.nap) nap += r.micros;
    return { sku: r.sku, count: r.count, nap: r.nap, amount_usd: formatUsd(r.micros) };
  });
  return { by_sku, total_usd: formatUsd(total), nap_usd: formatUsd(nap), total_micros: total, nap_micros: nap };
}

/**
 * What tests read back from the ledger, through its own read functions (the
 * log and the keys' receipt lists), never through storage tables: a charge is
 * what a receipt states, a receipt is an entry of the receipts log.
 */
import type { Client } from '../../src/ledger/sql.ts';
import { scanKeyReceipts } from '../../src/ledger/key-receipts.ts';
import { logSize, readEntries } from '../../src/ledger/log.ts';
import { RECEIPTS_LOG, receiptsFromEntries, type StoredReceipt } from '../../src/ledger/receipts.ts';

export interface ChargeRow {
  sku: string;
  amount_micros: number;
  nap: number;
  /** The receipt that states the charge. */
  ref: string;
}

/** Every receipt of the log, oldest first. */
export async function allReceipts(db: Client): Promise<StoredReceipt[]> {
  const size = await logSize(db, RECEIPTS_LOG);
  return receiptsFromEntries(await readEntries(db, RECEIPTS_LOG, 0, size));
}

export const receiptCount = (db: Client): Promise<number> => logSize(db, RECEIPTS_LOG);

/** The charges of `keyId` (every key when undefined) in the order they were made. */
export async function chargesOf(db: Client, keyId?: string): Promise<ChargeRow[]> {
  const receipts = keyId
    ? (await scanKeyReceipts(db, [keyId], { limit: 1_000_000, budget: 1_000_000 })).receipts.reverse()
    : await allReceipts(db);
  return receipts.flatMap((r) =>
    (r.payload.charges ?? []).map((c) => ({ sku: c.sku, amount_micros: c.amount_micros, nap: c.nap ? 1 : 0, ref: r.receipt_id })),
  );
}

/** A receipt by id, from the log (undefined when no receipt has it). */
export async function receiptById(db: Client, id: string): Promise<StoredReceipt | undefined> {
  return (await allReceipts(db)).find((r) => r.receipt_id === id);
}

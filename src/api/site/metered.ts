/**
 * The shape every companion-site metered write shares: make the receipt
 * (batch-sealed unless the act hands out a self-contained JWS), then commit it
 * as an act of the pipeline (api/act.ts): the area's state, the meter rows,
 * the receipt and the idempotent answer in one transaction, with the acts
 * queued beside it.
 */
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event } from 'h3';
import { tollMicros } from '../../catalog/tolls.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import type { ActRecord } from '../../ledger/records.ts';
import { sealedReceipt, signReceipt, type Receipt, type ReceiptInput } from '../../ledger/receipts.ts';
import { commitAct } from '../act.ts';
import type { AppContext } from '../context.ts';
import type { Reply } from '../reply.ts';

export interface MeterLine {
  sku: string;
  amountMicros: number;
  nap: boolean;
}

/** A charge of one SKU at its toll from tolls.json. */
export function toll(sku: string, nap = false): MeterLine {
  return { sku, amountMicros: tollMicros(sku), nap };
}

export { chargeView } from '../charge.ts';

/** The receipt fields every metered act shares. */
export function receiptFields(r: Receipt): { receipt_id: string; verify_url: string } {
  return { receipt_id: r.receipt_id, verify_url: r.verify_url };
}

/**
 * Makes the receipt of `input` for `key`, then commits `write` (the area's
 * state change and answer), the charges and the receipt together. `write` may
 * throw a Problem: then nothing of the act is written or charged. With
 * `signed`, the receipt carries its own JWS (for a token the caller presents
 * elsewhere, e.g. the execute-gate receipt); otherwise it is batch-sealed.
 * An act that writes nothing of its own but the record of what it did uses
 * `meteredAct`.
 */
export async function meteredWrite(
  event: H3Event,
  ctx: AppContext,
  key: ApiKey,
  input: Omit<ReceiptInput, 'key_id'>,
  charges: readonly MeterLine[],
  write: (tx: Transaction, receipt: Receipt) => Promise<Reply>,
  opts: { signed?: boolean } = {},
): Promise<Reply> {
  const receipt = await receiptOf(ctx, key, input, opts);
  return commitAct(event, ctx, key, {
    run: async (tx) => ({
      reply: await write(tx, receipt),
      writes: { receipt, charges: chargesOf(key, charges) },
    }),
  });
}

/**
 * A metered act decided purely: `make` gives its answer and, if it keeps one,
 * the record of what it did in its area (ledger/records.ts). Nothing is read
 * or claimed under the lock, so the act costs no statement of its own: its
 * record is written multi-row with its group's receipts and charges.
 */
export async function meteredAct(
  event: H3Event,
  ctx: AppContext,
  key: ApiKey,
  input: Omit<ReceiptInput, 'key_id'>,
  charges: readonly MeterLine[],
  make: (receipt: Receipt) => { record?: ActRecord; reply: Reply },
): Promise<Reply> {
  const receipt = await receiptOf(ctx, key, input, {});
  const { record, reply } = make(receipt);
  return commitAct(event, ctx, key, { decide: () => ({ reply, writes: { receipt, charges: chargesOf(key, charges), records: record ? [record] : [] } }) });
}

function receiptOf(ctx: AppContext, key: ApiKey, input: Omit<ReceiptInput, 'key_id'>, opts: { signed?: boolean }): Promise<Receipt> | Receipt {
  return opts.signed ? signReceipt(ctx, { ...input, key_id: key.id }) : sealedReceipt(ctx, { ...input, key_id: key.id });
}

const chargesOf = (key: ApiKey, charges: readonly MeterLine[]) => charges.map((c) => ({ keyId: key.id, ...c }));

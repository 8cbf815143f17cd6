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
  const receipt = opts.signed ? await signReceipt(ctx, { ...input, key_id: key.id }) : sealedReceipt(ctx, { ...input, key_id: key.id });
  return commitAct(event, ctx, key, {
    run: async (tx) => ({
      reply: await write(tx, receipt),
      writes: { receipt, charges: charges.map((c) => ({ keyId: key.id, ...c })) },
    }),
  });
}

/**
 * The shape every companion-site metered write shares: make the receipt
 * (batch-sealed unless the act hands out a self-contained JWS), then in ONE
 * transaction write the area's state, the meter rows, the receipt, and the
 * idempotent answer.
 */
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event } from 'h3';
import { tollMicros } from '../../catalog/tolls.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { recordCharge } from '../../ledger/meter.ts';
import { recordReceipt, sealedReceipt, signReceipt, type Receipt, type ReceiptInput } from '../../ledger/receipts.ts';
import type { AppContext } from '../context.ts';
import { commitReply } from '../idempotency.ts';
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
  return commitReply(event, ctx, async (tx) => {
    const out = await write(tx, receipt);
    for (const c of charges) {
      await recordCharge(tx, { keyId: key.id, sku: c.sku, amountMicros: c.amountMicros, nap: c.nap, ref: receipt.receipt_id });
    }
    await recordReceipt(tx, receipt);
    return out;
  });
}

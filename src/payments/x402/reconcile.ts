/**
 * Finishes payments a crash left `settling` (claimed, settle sent or about to
 * be, act not committed). For each, settle is asked again with the same signed
 * payload: the facilitator settles it now, or says its nonce is already used
 * (the first settle went through: the authorization pays only our payTo), or
 * refuses it (it never moved money). Money that moved gets its act committed:
 * the receipt decided before settling, now with the payment; otherwise the
 * payment is marked failed and no act exists. Unknown outcomes wait for the next run.
 * It runs as a background job of the server every X402_RECONCILE_AFTER_SECONDS
 * (so also after a restart), on rows at least that old: a settle in flight in
 * this or another process is left alone.
 */
import type { ReceiptInput } from '../../ledger/receipts.ts';
import { finishPayment, staleSettling, type PaymentRow } from '../../ledger/x402-payments.ts';
import type { X402Context } from './context.ts';
import type { Facilitator } from './facilitator.ts';

/** The facilitator's reason when an EIP-3009 authorization was already used on chain. */
const NONCE_USED = /nonce_already_used/;

export interface ReconcileSummary {
  settled: string[];
  failed: string[];
  unknown: string[];
}

function factsOf(row: PaymentRow, transaction: string | undefined) {
  return {
    protocol: 'x402',
    scheme: 'exact',
    payment_id: row.payment_id,
    payer: row.payer,
    amount: row.amount,
    asset: row.asset,
    network: row.network,
    pay_to: row.pay_to,
    ...(transaction ? { transaction } : { transaction: null, settled_before_restart: true }),
    reconciled: true,
  };
}

export async function reconcileX402Payments(
  ctx: X402Context,
  facilitator: Facilitator,
  olderThanSeconds: number,
): Promise<ReconcileSummary> {
  const before = new Date(Date.now() - olderThanSeconds * 1000).toISOString();
  const out: ReconcileSummary = { settled: [], failed: [], unknown: [] };
  for (const row of await staleSettling(ctx.ledger.read, before)) {
    const outcome = await facilitator.settle(JSON.parse(row.payment_payload), JSON.parse(row.requirements));
    const moved = outcome.kind === 'settled' || (outcome.kind === 'refused' && NONCE_USED.test(outcome.reason));
    if (moved) {
      const transaction = outcome.kind === 'settled' ? outcome.response.transaction : undefined;
      const act = JSON.parse(row.pending_receipt) as ReceiptInput;
      const done = await ctx.ledger
        .act({
          needs: {},
          run: async (tx, state) => {
            const receipt = state.receipt(ctx, { ...act, data: { ...act.data, payment: factsOf(row, transaction) } }, { signed: true });
            // Finished by another run meanwhile: this receipt is discarded with the act.
            if (!(await finishPayment(tx, row.payment_id, { state: 'settled', transaction, receiptId: receipt.receipt_id })))
              throw new AlreadyFinished();
            return { writes: { receipt }, result: true };
          },
        })
        .catch((e: unknown) => {
          if (e instanceof AlreadyFinished) return false;
          throw e;
        });
      if (done) out.settled.push(row.payment_id);
    } else if (outcome.kind === 'refused') {
      await ctx.ledger.write((tx) => finishPayment(tx, row.payment_id, { state: 'failed', error: outcome.reason }));
      out.failed.push(row.payment_id);
    } else {
      out.unknown.push(row.payment_id);
    }
  }
  if (out.settled.length + out.failed.length + out.unknown.length > 0) ctx.log('info', 'x402 payments reconciled', { ...out });
  return out;
}

class AlreadyFinished extends Error {
  override name = 'AlreadyFinished';
}

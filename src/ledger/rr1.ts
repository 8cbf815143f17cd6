/**
 * RR-1 receipt uses (SPEC 2.4): each receipt presented to this service's demo
 * irreversible act is claimed once, ever (the primary key).
 * src/api/site/require-receipt.ts mounts the middleware that asks.
 */
import type { Transaction } from './sql.ts';

/** Claims `receiptId` for `act`; answers false when it was claimed before. */
export async function claimRr1ReceiptUse(tx: Transaction, receiptId: string, act: string, usedAt: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'INSERT INTO rr1_receipt_uses (receipt_id, act, used_at) VALUES (?, ?, ?) ON CONFLICT (receipt_id) DO NOTHING',
    args: [receiptId, act, usedAt],
  });
  return rs.rowsAffected > 0;
}

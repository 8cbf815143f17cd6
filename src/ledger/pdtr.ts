/**
 * PDTR bindings (SPEC 2.4): an x402 payment hash bound to the action it paid
 * for, once per payment hash, ever (the primary key). src/api/site/pdtr.ts
 * decides and answers.
 */
import type { Client, Transaction } from './sql.ts';

export interface PaymentBindingRow {
  paymentHash: string;
  actionRef: string;
  /** The owning account (ownerId). */
  owner: string;
  receiptId: string;
  createdAt: string;
}

/** Binds the payment hash unless it is bound already; answers whether this call bound it. */
export async function bindPaymentHash(tx: Transaction, b: PaymentBindingRow): Promise<boolean> {
  const ins = await tx.execute({
    sql: 'INSERT INTO pdtr_bindings (payment_hash, action_ref, key_id, receipt_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (payment_hash) DO NOTHING',
    args: [b.paymentHash, b.actionRef, b.owner, b.receiptId, b.createdAt],
  });
  return ins.rowsAffected > 0;
}

/** The binding of `paymentHash`, or undefined when it is not bound. */
export async function findPaymentBinding(
  db: Client | Transaction,
  paymentHash: string,
): Promise<{ action_ref: string; owner: string; receipt_id: string; created_at: string } | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT action_ref, key_id, receipt_id, created_at FROM pdtr_bindings WHERE payment_hash = ?',
      args: [paymentHash],
    })
  ).rows[0];
  return (
    r && { action_ref: String(r.action_ref), owner: String(r.key_id), receipt_id: String(r.receipt_id), created_at: String(r.created_at) }
  );
}

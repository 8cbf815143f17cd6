/** x402 payments taken for acts: claimed before settling, then settled with the act or failed (migration 0130). */
import type { Client, Transaction } from './sql.ts';
import { nowIso } from '../ids.ts';

export type PaymentState = 'settling' | 'settled' | 'failed';

export interface PaymentRow {
  payment_id: string;
  state: PaymentState;
  resource: string;
  request_hash: string;
  network: string;
  asset: string;
  amount: string;
  payer: string;
  pay_to: string;
  x402_version: number;
  payment_payload: string;
  requirements: string;
  pending_receipt: string;
  receipt_id: string | null;
  transaction_hash: string | null;
  error: string | null;
  created_at: string;
}

export type NewPayment = Omit<PaymentRow, 'state' | 'receipt_id' | 'transaction_hash' | 'error' | 'created_at'>;

const COLUMNS =
  'payment_id, state, resource, request_hash, network, asset, amount, payer, pay_to, x402_version, payment_payload, requirements, receipt_id, pending_receipt, transaction_hash, error, created_at';

function rowOf(r: Record<string, unknown>): PaymentRow {
  return {
    payment_id: String(r.payment_id),
    state: String(r.state) as PaymentState,
    resource: String(r.resource),
    request_hash: String(r.request_hash),
    network: String(r.network),
    asset: String(r.asset),
    amount: String(r.amount),
    payer: String(r.payer),
    pay_to: String(r.pay_to),
    x402_version: Number(r.x402_version),
    payment_payload: String(r.payment_payload),
    requirements: String(r.requirements),
    pending_receipt: String(r.pending_receipt),
    receipt_id: r.receipt_id === null ? null : String(r.receipt_id),
    transaction_hash: r.transaction_hash === null ? null : String(r.transaction_hash),
    error: r.error === null ? null : String(r.error),
    created_at: String(r.created_at),
  };
}

export async function getPayment(db: Client | Transaction, paymentId: string): Promise<PaymentRow | undefined> {
  const rs = await db.execute({ sql: `SELECT ${COLUMNS} FROM x402_payments WHERE payment_id = ?`, args: [paymentId] });
  return rs.rows[0] ? rowOf(rs.rows[0] as unknown as Record<string, unknown>) : undefined;
}

/**
 * Claims a payment for one act (state `settling`). False when the payment is
 * already known in any state: a payment is used once, whatever happened to it.
 */
export async function claimPayment(tx: Transaction, p: NewPayment): Promise<boolean> {
  const now = nowIso();
  const rs = await tx.execute({
    sql: `INSERT INTO x402_payments (payment_id, state, resource, request_hash, network, asset, amount, payer, pay_to, x402_version,
            payment_payload, requirements, pending_receipt, created_at, updated_at)
          VALUES (?, 'settling', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (payment_id) DO NOTHING`,
    args: [
      p.payment_id,
      p.resource,
      p.request_hash,
      p.network,
      p.asset,
      p.amount,
      p.payer,
      p.pay_to,
      p.x402_version,
      p.payment_payload,
      p.requirements,
      p.pending_receipt,
      now,
      now,
    ],
  });
  return rs.rowsAffected === 1;
}

/** Moves a `settling` payment to its outcome; false when it was not `settling` (another process finished it). */
export async function finishPayment(
  tx: Transaction | Client,
  paymentId: string,
  outcome: {
    state: Exclude<PaymentState, 'settling'>;
    transaction?: string | undefined;
    receiptId?: string | undefined;
    error?: string | undefined;
  },
): Promise<boolean> {
  const rs = await tx.execute({
    sql: "UPDATE x402_payments SET state = ?, transaction_hash = ?, receipt_id = ?, error = ?, updated_at = ? WHERE payment_id = ? AND state = 'settling'",
    args: [outcome.state, outcome.transaction ?? null, outcome.receiptId ?? null, outcome.error ?? null, nowIso(), paymentId],
  });
  return rs.rowsAffected === 1;
}

/** Payments still `settling` that were claimed before `before` (ISO time): left so by a crash. */
export async function staleSettling(db: Client, before: string): Promise<PaymentRow[]> {
  const rs = await db.execute({
    sql: `SELECT ${COLUMNS} FROM x402_payments WHERE state = 'settling' AND created_at <= ? ORDER BY created_at`,
    args: [before],
  });
  return rs.rows.map((r) => rowOf(r as unknown as Record<string, unknown>));
}

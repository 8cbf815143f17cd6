/** Pre-finality receipt uses: which payment order a receipt (jti) has cleared at the RTP gate. */
import type { Client, Transaction } from './sql.ts';
import { nowIso } from '../ids.ts';

/** The order fingerprint a receipt was used for, or undefined when it is unused. */
export async function receiptUse(db: Client | Transaction, jti: string): Promise<string | undefined> {
  const rs = await db.execute({ sql: 'SELECT order_hash FROM prefinality_receipt_uses WHERE jti = ?', args: [jti] });
  return rs.rows[0] ? String(rs.rows[0].order_hash) : undefined;
}

/**
 * Claims a receipt for an order inside the caller's write transaction. True
 * only for the call that made the claim: a receipt clears one order, once.
 */
export async function claimReceiptUse(tx: Transaction, jti: string, orderHash: string, keyId: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'INSERT INTO prefinality_receipt_uses (jti, order_hash, key_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (jti) DO NOTHING',
    args: [jti, orderHash, keyId, nowIso()],
  });
  return rs.rowsAffected === 1;
}

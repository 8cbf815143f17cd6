/**
 * The openings of commitments in public receipts (crypto/commitment.ts): which
 * field of which receipt, the committed value and its salt. Private: served
 * only to the receipt's account (GET /v1/receipts/:id/openings).
 *
 * A receipt carries its openings (`Receipt.openings`) into the row that lists
 * it under its key (key-receipts.ts). Receipts written before that kept them
 * in commitment_openings, read here still.
 */
import { keyReceiptOpenings } from './key-receipts.ts';
import type { ReceiptOpening, StoredReceipt } from './receipts.ts';
import type { Client } from './sql.ts';

/** The openings of receipt `r`, in field order; [] when it has none. */
export async function openingsOf(db: Client, r: StoredReceipt): Promise<ReceiptOpening[]> {
  const keyId = r.payload.key_id;
  const listed = keyId ? await keyReceiptOpenings(db, keyId, r.payload.issued_at.slice(0, 10), r.log_index) : [];
  if (listed.length) return [...listed].sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  const rs = await db.execute({
    sql: 'SELECT field, salt, value FROM commitment_openings WHERE receipt_id = ? ORDER BY field',
    args: [r.receipt_id],
  });
  return rs.rows.map((row) => ({ field: String(row.field), salt: String(row.salt), value: JSON.parse(String(row.value)) as unknown }));
}

/**
 * Gives every inference session sealed before sessions were Merkle logs its
 * own log (`inference/<session id>`), once: each exchange's leaf data is
 * rebuilt from its receipt (the canonical JSON of receipt_id, request_sha256
 * and response_sha256) and must hash to the leaf hash the seal answered. The
 * receipt is read from its receipts-log leaf, which every receipt has had in
 * every layout of the receipts table (migration 0181).
 */
import type { Transaction } from '../sql.ts';
import { canonicalJson } from '../../crypto/canonical.ts';
import { sessionLog } from '../inference.ts';
import { appendLeaf, ensureLog } from '../log.ts';
import { receiptFromLeaf } from '../receipts.ts';

export async function up(tx: Transaction): Promise<void> {
  const rs = await tx.execute(`
    SELECT l.session_id, l.idx, l.leaf_hash, l.receipt_id, e.leaf AS receipt_leaf
    FROM inference_leaves l LEFT JOIN receipts r ON r.id = l.receipt_id
    LEFT JOIN log_entries e ON e.log = 'receipts' AND e.idx = r.log_index
    WHERE NOT EXISTS (SELECT 1 FROM logs WHERE name = 'inference/' || l.session_id)
    ORDER BY l.session_id, l.idx`);
  for (const row of rs.rows) {
    const session = String(row.session_id);
    const receipt = row.receipt_leaf == null ? undefined : receiptFromLeaf(Buffer.from(row.receipt_leaf as ArrayBuffer).toString('utf8'));
    const data = receipt?.payload.data as { request_sha256?: string; response_sha256?: string } | undefined;
    if (!data?.request_sha256 || !data.response_sha256)
      throw new Error(`inference session ${session}: no receipt for exchange ${String(row.idx)}`);
    const leaf = Buffer.from(
      canonicalJson({ receipt_id: String(row.receipt_id), request_sha256: data.request_sha256, response_sha256: data.response_sha256 }),
    );
    await ensureLog(tx, sessionLog(session));
    const { index, leafHash } = await appendLeaf(tx, sessionLog(session), leaf);
    if (index !== Number(row.idx) || Buffer.from(leafHash).toString('hex') !== String(row.leaf_hash)) {
      throw new Error(`inference session ${session}: exchange ${String(row.idx)} does not rebuild from its receipt`);
    }
  }
}

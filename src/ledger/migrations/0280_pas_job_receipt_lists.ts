/**
 * A PAS job's receipts become lists of log indexes, one row per job and batch
 * (ledger/pas.ts, index-lists.ts), instead of a row per receipt: each old
 * row's receipt is found in the receipts log by its id (for an id minted
 * before tiles, its `receipt_ids_legacy` row; otherwise the index the id
 * carries). A row whose receipt has no such row, or whose index is past the
 * log's end, stops the upgrade before anything is dropped. Kind, decision and
 * time are read from the receipt from now on.
 */
import type { Transaction } from '../sql.ts';
import { INDEX_LIST_MAX, packOffsets } from '../index-lists.ts';
import { logSize } from '../log.ts';
import { RECEIPTS_LOG, receiptIndex } from '../receipts.ts';

export async function up(tx: Transaction): Promise<void> {
  await tx.execute(`CREATE TABLE pas_job_receipt_lists (
    key_id TEXT NOT NULL, job_id TEXT NOT NULL, first INTEGER NOT NULL, offsets BLOB NOT NULL,
    PRIMARY KEY (key_id, job_id, first)) WITHOUT ROWID`);
  const rs = await tx.execute(`
    SELECT j.key_id, j.job_id, j.receipt_id, l.log_index AS legacy_index
    FROM pas_job_receipts j LEFT JOIN receipt_ids_legacy l ON l.id = j.receipt_id
    ORDER BY j.key_id, j.job_id`);
  const size = await logSize(tx, RECEIPTS_LOG);
  let list: { keyId: string; jobId: string; indexes: number[] } | undefined;
  let listed = 0;
  const flush = async () => {
    if (!list) return;
    list.indexes.sort((a, b) => a - b);
    await tx.execute({
      sql: 'INSERT INTO pas_job_receipt_lists (key_id, job_id, first, offsets) VALUES (?, ?, ?, ?)',
      args: [list.keyId, list.jobId, list.indexes[0]!, packOffsets(list.indexes)],
    });
    listed += list.indexes.length;
    list = undefined;
  };
  for (const r of rs.rows) {
    const keyId = String(r.key_id);
    const jobId = String(r.job_id);
    const id = String(r.receipt_id);
    const index = r.legacy_index == null ? receiptIndex(id) : Number(r.legacy_index);
    if (index === undefined || index >= size) throw new Error(`PAS job ${jobId}: receipt ${id} is not in the receipts log`);
    if (!list || list.keyId !== keyId || list.jobId !== jobId || list.indexes.length === INDEX_LIST_MAX) await flush();
    list ??= { keyId, jobId, indexes: [] };
    list.indexes.push(index);
  }
  await flush();
  if (listed !== rs.rows.length) throw new Error(`PAS job receipts: ${listed} listed of ${rs.rows.length}`);
  await tx.execute('DROP TABLE pas_job_receipts');
}

/**
 * NAP records (SPEC 2.4): spoliation seals, one row per sealed evidence set
 * (its Merkle root; the items themselves are in the seal's receipt). The rules
 * are in src/domain/nap.ts; src/api/site/nap.ts decides and answers.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface SpoliationSealRow {
  id: string;
  keyId: string;
  matterRef: string;
  evidenceCount: number;
  /** RFC 9162 Merkle root (hex) over the evidence SHA-256s. */
  rootHash: string;
  receiptId: string;
  createdAt: string;
}

/** Multi-row: an act declares its row among its writes (records.ts), written with its group's. */
export async function insertSpoliationSeals(tx: Transaction, rows: readonly SpoliationSealRow[]): Promise<void> {
  await insertRows(
    tx,
    'spoliation_seals',
    ['id', 'key_id', 'matter_ref', 'evidence_count', 'root_hash', 'receipt_id', 'created_at'],
    rows.map((s) => [s.id, s.keyId, s.matterRef, s.evidenceCount, s.rootHash, s.receiptId, s.createdAt]),
  );
}

/** A spoliation seal. Written with its group's records (records.ts). */
export const SPOLIATION_SEALS: RecordWriter<SpoliationSealRow> = recordWriter('spoliation_seals', insertSpoliationSeals);

/** The spoliation seals of one matter of an account (every key of it), oldest first. */
export async function matterSeals(
  db: Client | Transaction,
  accountId: string,
  matterRef: string,
): Promise<Array<{ id: string; rootHash: string; evidenceCount: number; receiptId: string; createdAt: string }>> {
  const rs = await db.execute({
    sql: `SELECT id, root_hash, evidence_count, receipt_id, created_at FROM spoliation_seals
          WHERE matter_ref = ? AND key_id IN (SELECT id FROM api_keys WHERE account_id = ?) ORDER BY created_at, id`,
    args: [matterRef, accountId],
  });
  return rs.rows.map((r) => ({
    id: String(r.id),
    rootHash: String(r.root_hash),
    evidenceCount: Number(r.evidence_count),
    receiptId: String(r.receipt_id),
    createdAt: String(r.created_at),
  }));
}

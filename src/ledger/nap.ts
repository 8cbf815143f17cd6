/**
 * NAP records (SPEC 2.4): spoliation seals, one row per sealed evidence set
 * (its Merkle root; the items themselves are in the seal's receipt). The rules
 * are in src/domain/nap.ts; src/api/site/nap.ts decides and answers.
 */
import type { Transaction } from './sql.ts';

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

export async function insertSpoliationSeal(tx: Transaction, s: SpoliationSealRow): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO spoliation_seals (id, key_id, matter_ref, evidence_count, root_hash, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [s.id, s.keyId, s.matterRef, s.evidenceCount, s.rootHash, s.receiptId, s.createdAt],
  });
}

/**
 * Conformity packs (SPEC 2.5, foundry layer 5): each generated pack, stored as
 * sealed (its canonical JSON's hash is what the receipt seals). The rules are
 * in src/domain/conformity.ts; src/api/site/conformity.ts decides and answers.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface ConformityPackRow {
  id: string;
  /** The owning account (ownerId). */
  owner: string;
  categoryId: string;
  packHash: string;
  receiptId: string;
  createdAt: string;
  /** The pack itself, stored as JSON. */
  pack: unknown;
}

/** Multi-row: an act declares its row among its writes (records.ts), written with its group's. */
export async function insertConformityPacks(tx: Transaction, rows: readonly ConformityPackRow[]): Promise<void> {
  await insertRows(
    tx,
    'conformity_packs',
    ['id', 'key_id', 'category_id', 'pack_hash', 'receipt_id', 'created_at', 'pack'],
    rows.map((p) => [p.id, p.owner, p.categoryId, p.packHash, p.receiptId, p.createdAt, JSON.stringify(p.pack)]),
  );
}

/** A conformity pack. Written with its group's records (records.ts). */
export const CONFORMITY_PACKS: RecordWriter<ConformityPackRow> = recordWriter('conformity_packs', insertConformityPacks);

/** The pack `id` if the account `owner` generated it, else undefined. */
export async function findConformityPack(
  db: Client | Transaction,
  id: string,
  owner: string,
): Promise<{ pack: unknown; pack_hash: string; receipt_id: string; created_at: string } | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT pack, pack_hash, receipt_id, created_at FROM conformity_packs WHERE id = ? AND key_id = ?',
      args: [id, owner],
    })
  ).rows[0];
  return (
    r && {
      pack: JSON.parse(String(r.pack)),
      pack_hash: String(r.pack_hash),
      receipt_id: String(r.receipt_id),
      created_at: String(r.created_at),
    }
  );
}

/**
 * The openings of commitments in public receipts (crypto/commitment.ts): which
 * field of which receipt, the committed value and its salt. Private: served
 * only to the receipt's account (GET /v1/receipts/:id/openings).
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';

export interface OpeningRow {
  receiptId: string;
  /** The field's path in the receipt payload: "subject", "data.reason", "data.evidence.0.name". */
  field: string;
  accountId: string;
  commitment: string;
  salt: string;
  /** The committed value. */
  value: unknown;
  createdAt: string;
}

/** Multi-row: an act declares its openings among its records (records.ts). */
export async function insertOpenings(tx: Transaction, rows: readonly OpeningRow[]): Promise<void> {
  await insertRows(
    tx,
    'commitment_openings',
    ['receipt_id', 'field', 'account_id', 'commitment', 'salt', 'value', 'created_at'],
    rows.map((o) => [o.receiptId, o.field, o.accountId, o.commitment, o.salt, JSON.stringify(o.value), o.createdAt]),
  );
}

/** The opening of a commitment that stands for caller free text in the act's public receipt. Written with its group's records (records.ts). */
export const COMMITMENT_OPENINGS: RecordWriter<OpeningRow> = recordWriter('commitment_openings', insertOpenings);

/** The openings of one receipt, in field order. */
export async function openingsOf(db: Client | Transaction, receiptId: string): Promise<OpeningRow[]> {
  const rs = await db.execute({ sql: 'SELECT * FROM commitment_openings WHERE receipt_id = ? ORDER BY field', args: [receiptId] });
  return rs.rows.map((r) => ({
    receiptId,
    field: String(r.field),
    accountId: String(r.account_id),
    commitment: String(r.commitment),
    salt: String(r.salt),
    value: JSON.parse(String(r.value)) as unknown,
    createdAt: String(r.created_at),
  }));
}

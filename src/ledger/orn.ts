/**
 * ORN events (SPEC 2.4): one row per General Average declaration and per SHARP
 * slice, with the amount charged. The rules are in src/domain/orn.ts;
 * src/api/site/orn.ts decides and answers.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Transaction } from './sql.ts';

export interface OrnEventRow {
  id: string;
  keyId: string;
  kind: 'ga_declare' | 'sharp';
  graphId: string | null;
  amountMicros: bigint;
  receiptId: string;
  createdAt: string;
}

/** Multi-row: an act declares its row among its writes (records.ts), written with its group's. */
export async function insertOrnEvents(tx: Transaction, rows: readonly OrnEventRow[]): Promise<void> {
  await insertRows(
    tx,
    'orn_events',
    ['id', 'key_id', 'kind', 'graph_id', 'amount_micros', 'receipt_id', 'created_at'],
    rows.map((e) => [e.id, e.keyId, e.kind, e.graphId, Number(e.amountMicros), e.receiptId, e.createdAt]),
  );
}

/** An ORN event (a GA declaration, a SHARP). Written with its group's records (records.ts). */
export const ORN_EVENTS: RecordWriter<OrnEventRow> = recordWriter('orn_events', insertOrnEvents);

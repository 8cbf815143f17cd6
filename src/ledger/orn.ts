/**
 * ORN events (SPEC 2.4): one row per General Average declaration and per SHARP
 * slice, with the amount charged. The rules are in src/domain/orn.ts;
 * src/api/site/orn.ts decides and answers.
 */
import type { Transaction } from './sql.ts';

export interface OrnEventRow {
  id: string;
  keyId: string;
  kind: 'ga_declare' | 'sharp';
  graphId: string | null;
  amountMicros: bigint;
  receiptId: string;
  createdAt: string;
}

export async function insertOrnEvent(tx: Transaction, e: OrnEventRow): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO orn_events (id, key_id, kind, graph_id, amount_micros, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [e.id, e.keyId, e.kind, e.graphId, Number(e.amountMicros), e.receiptId, e.createdAt],
  });
}

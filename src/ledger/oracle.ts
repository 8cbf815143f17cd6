/** Sealed oracle aggregates: what a trigger fire reads of one, by id; the whole result is its receipt's. */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Transaction } from './sql.ts';
import type { Aggregate } from '../domain/oracle.ts';
import { type Db } from './log.ts';

export interface StoredAggregate {
  id: string;
  key_id: string;
  metric: string;
  status: Aggregate['status'];
  value: string | null;
  receipt_id: string;
  created_at: string;
}

/** A sealed aggregate's row, recorded with its group (records.ts); its result is its receipt's data. */
export async function insertAggregates(tx: Transaction, rows: readonly StoredAggregate[]): Promise<void> {
  await insertRows(
    tx,
    'oracle_aggregates',
    ['id', 'key_id', 'metric', 'status', 'value', 'receipt_id', 'created_at'],
    rows.map((a) => [a.id, a.key_id, a.metric, a.status, a.value, a.receipt_id, a.created_at]),
  );
}

/** A sealed oracle aggregate. A trigger fire reads one under the lock, but only by the id its answer gave: no act of the group that records it can name it yet. Written with its group's records (records.ts). */
export const ORACLE_AGGREGATES: RecordWriter<StoredAggregate> = recordWriter('oracle_aggregates', insertAggregates);

export async function getAggregate(db: Db, id: string): Promise<StoredAggregate | undefined> {
  const rs = await db.execute({
    sql: 'SELECT id, key_id, metric, status, value, receipt_id, created_at FROM oracle_aggregates WHERE id = ?',
    args: [id],
  });
  const r = rs.rows[0];
  if (!r) return undefined;
  return {
    id: String(r.id),
    key_id: String(r.key_id),
    metric: String(r.metric),
    status: String(r.status) as Aggregate['status'],
    value: r.value === null ? null : String(r.value),
    receipt_id: String(r.receipt_id),
    created_at: String(r.created_at),
  };
}

/** Sealed oracle aggregates: the result as computed, beside its receipt. */
import type { Transaction } from './sql.ts';
import type { Aggregate } from '../domain/oracle.ts';
import { insertRows, type Db } from './log.ts';

export interface StoredAggregate {
  id: string;
  key_id: string;
  metric: string;
  status: Aggregate['status'];
  value: string | null;
  receipt_id: string;
  created_at: string;
}

/** A sealed aggregate's row, recorded with its group (records.ts). */
export interface AggregateRow {
  aggregate: StoredAggregate;
  result: Aggregate;
}

export async function insertAggregates(tx: Transaction, rows: readonly AggregateRow[]): Promise<void> {
  await insertRows(
    tx,
    'INSERT INTO oracle_aggregates (id, key_id, metric, status, value, result, receipt_id, created_at) VALUES',
    '(?, ?, ?, ?, ?, ?, ?, ?)',
    rows.map(({ aggregate: a, result }) => [a.id, a.key_id, a.metric, a.status, a.value, JSON.stringify(result), a.receipt_id, a.created_at]),
  );
}

export async function getAggregate(db: Db, id: string): Promise<StoredAggregate | undefined> {
  const rs = await db.execute({ sql: 'SELECT id, key_id, metric, status, value, receipt_id, created_at FROM oracle_aggregates WHERE id = ?', args: [id] });
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

/** Signal mandates and the pattern feed's counts (read from the triggers the feed publishes). */
import type { Client, Transaction } from './sql.ts';

export interface MandateRow {
  id: string;
  accountId: string;
  metric: string;
  overage: boolean;
  receiptId: string;
  createdAt: string;
}

export async function countMandates(db: Client | Transaction, accountId: string): Promise<number> {
  const rs = await db.execute({ sql: 'SELECT COUNT(*) AS n FROM signal_mandates WHERE account_id = ?', args: [accountId] });
  return Number(rs.rows[0]?.n ?? 0);
}

export async function insertMandate(tx: Transaction, m: MandateRow): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO signal_mandates (id, account_id, metric, overage, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [m.id, m.accountId, m.metric, m.overage ? 1 : 0, m.receiptId, m.createdAt],
  });
}

export async function mandatesOf(db: Client, accountId: string): Promise<MandateRow[]> {
  const rs = await db.execute({ sql: 'SELECT * FROM signal_mandates WHERE account_id = ? ORDER BY created_at, id', args: [accountId] });
  return rs.rows.map((r) => ({
    id: String(r.id),
    accountId,
    metric: String(r.metric),
    overage: Number(r.overage) === 1,
    receiptId: String(r.receipt_id),
    createdAt: String(r.created_at),
  }));
}

/** The pattern of one metric over every account's triggers since `since`: armed and fired, no account named. */
export async function metricPattern(db: Client, metric: string, since: string): Promise<{ published: number; fired: number }> {
  const rs = await db.execute({
    sql: `SELECT COUNT(*) AS published, COALESCE(SUM(CASE WHEN state = 'FIRED' THEN 1 ELSE 0 END), 0) AS fired FROM triggers
          WHERE ${db.dialect.jsonText('threshold', 'metric')} = ? AND published_at >= ?`,
    args: [metric, since],
  });
  return { published: Number(rs.rows[0]?.published ?? 0), fired: Number(rs.rows[0]?.fired ?? 0) };
}

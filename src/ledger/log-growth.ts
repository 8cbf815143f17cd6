/**
 * How a log grew: the time each of up to `points` evenly spaced entries was
 * appended, read by index from log_entries (one query, no scan of the log).
 */
import { logSize, type Db } from './log.ts';

export interface GrowthPoint {
  /** The tree size once this entry was appended. */
  size: number;
  at: string;
}

export async function logGrowth(db: Db, log: string, points: number): Promise<{ tree_size: number; points: GrowthPoint[] }> {
  const size = await logSize(db, log);
  if (size === 0) return { tree_size: 0, points: [] };
  const n = Math.min(points, size);
  const indices = [...new Set(Array.from({ length: n }, (_, k) => (n === 1 ? size - 1 : Math.round((k * (size - 1)) / (n - 1)))))];
  const rs = await db.execute({
    sql: `SELECT idx, created_at FROM log_entries WHERE log = ? AND idx IN (${indices.map(() => '?').join(',')}) ORDER BY idx`,
    args: [log, ...indices],
  });
  return { tree_size: size, points: rs.rows.map((r) => ({ size: Number(r.idx) + 1, at: String(r.created_at) })) };
}

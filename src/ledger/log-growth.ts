/**
 * How a log grew: the time each of up to `points` evenly spaced entries was
 * appended, read from the tiles those entries are in (no scan of the log).
 */
import { logSize, readEntriesAt, type Db } from './log.ts';

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
  const entries = await readEntriesAt(db, log, indices);
  return { tree_size: size, points: entries.map((e) => ({ size: e.index + 1, at: e.created_at })) };
}

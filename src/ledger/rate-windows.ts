/**
 * Fixed-window counters in the database (rate_windows), so that limits hold
 * across processes sharing it: the public demo limit (src/api/rate-limit.ts)
 * and the sign-in attempt limits (src/accounts/throttle.ts).
 */
import type { Transaction } from './sql.ts';

/** Counts one request in `bucket`'s window starting at `windowStart` (Unix seconds); answers the window's count. */
export async function countInWindow(tx: Transaction, bucket: string, windowStart: number): Promise<number> {
  const rs = await tx.execute({
    sql: `INSERT INTO rate_windows (bucket, window_start, count) VALUES (?, ?, 1)
          ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_windows.count + 1
          RETURNING count`,
    args: [bucket, windowStart],
  });
  return Number(rs.rows[0]!.count);
}

/** Drops every bucket's windows that started before `windowStart`. */
export async function dropWindowsBefore(tx: Transaction, windowStart: number): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM rate_windows WHERE window_start < ?', args: [windowStart] });
}

/** Drops `bucket`'s windows that started before `windowStart`. */
export async function dropBucketWindowsBefore(tx: Transaction, bucket: string, windowStart: number): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM rate_windows WHERE bucket = ? AND window_start < ?', args: [bucket, windowStart] });
}

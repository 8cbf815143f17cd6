/**
 * Sign-in attempt limits, per account (email) and per client address, in
 * fixed windows counted in the database's rate_windows table, so they hold
 * across processes sharing it.
 */
import type { Ledger } from '../ledger/db.ts';

/** Counts one attempt in `bucket`'s current window; returns the count and the seconds left in the window. */
export async function countAttempt(ledger: Ledger, bucket: string, windowSeconds: number): Promise<{ count: number; retryAfter: number }> {
  const now = Math.floor(Date.now() / 1000);
  const windowStart = now - (now % windowSeconds);
  const count = await ledger.write(async (tx) => {
    const rs = await tx.execute({
      sql: `INSERT INTO rate_windows (bucket, window_start, count) VALUES (?, ?, 1)
            ON CONFLICT (bucket, window_start) DO UPDATE SET count = count + 1 RETURNING count`,
      args: [bucket, windowStart],
    });
    await tx.execute({ sql: 'DELETE FROM rate_windows WHERE bucket = ? AND window_start < ?', args: [bucket, windowStart] });
    return Number(rs.rows[0]!.count);
  });
  return { count, retryAfter: windowStart + windowSeconds - now };
}

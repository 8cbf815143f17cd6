/**
 * Sign-in attempt limits (per account email and per client address) and
 * sign-up attempt limits (per client address), in fixed windows counted in
 * the database's rate_windows table, so they hold across processes sharing it.
 */
import type { Ledger } from '../ledger/db.ts';
import { countInWindow, dropBucketWindowsBefore } from '../ledger/rate-windows.ts';

/** Counts one attempt in `bucket`'s current window; returns the count and the seconds left in the window. */
export async function countAttempt(ledger: Ledger, bucket: string, windowSeconds: number): Promise<{ count: number; retryAfter: number }> {
  const now = Math.floor(Date.now() / 1000);
  const windowStart = now - (now % windowSeconds);
  const count = await ledger.write(async (tx) => {
    const n = await countInWindow(tx, bucket, windowStart);
    await dropBucketWindowsBefore(tx, bucket, windowStart);
    return n;
  });
  return { count, retryAfter: windowStart + windowSeconds - now };
}

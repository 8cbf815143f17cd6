/**
 * A per-process count of finished writes, for read caches (docs/configuration.md,
 * "Read caches"). `trackCommits` wraps `ledger.write` once, at start-up: every
 * write job that settles (committed or rolled back) bumps the count before its
 * caller resumes. A cached read stamped with the count is therefore exact for
 * changes made through this ledger; changes by other processes (or another
 * ledger on the same file) are caught by the cache's time bound instead.
 *
 * No statement is run for it: checking costs a property read, where SQLite's
 * `PRAGMA data_version` would cost a round trip into the driver per request.
 */
import type { Ledger } from './db.ts';

const counts = new WeakMap<Ledger, { n: number }>();

/** Starts counting `ledger`'s writes (idempotent). */
export function trackCommits(ledger: Ledger): void {
  if (counts.has(ledger)) return;
  const count = { n: 0 };
  counts.set(ledger, count);
  const write = ledger.write.bind(ledger);
  const bump = () => void count.n++;
  ledger.write = (job) => {
    const p = write(job);
    p.then(bump, bump);
    return p;
  };
}

/** Writes finished through `ledger` so far, or undefined when it is not tracked (then nothing may be cached). */
export function commitCount(ledger: Ledger): number | undefined {
  return counts.get(ledger)?.n;
}

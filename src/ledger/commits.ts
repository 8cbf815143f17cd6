/**
 * A per-process count of finished writes, for read caches (docs/configuration.md,
 * "Read caches"). `trackCommits` wraps the ledger's write entry points once, at
 * start-up: every write or act that settles (committed or rolled back) bumps
 * the count before its caller resumes. A cached read stamped with the count is
 * therefore exact for changes made through this ledger; changes by other
 * processes (or another ledger on the same file) are caught by the cache's
 * time bound instead.
 *
 * Every method of the ledger except the ones known not to write is wrapped, so
 * a write entry point added later is counted without anyone remembering this
 * file (counting a call that wrote nothing only costs a cache miss).
 *
 * No statement is run for it: checking costs a property read, where SQLite's
 * `PRAGMA data_version` would cost a call into the driver per request.
 */
import type { Ledger } from './db.ts';

/** Ledger members that never write (everything else is counted). */
const NOT_WRITES = new Set(['read', 'ping', 'close', 'onBatchEnd']);

const counts = new WeakMap<Ledger, { n: number }>();

/** Starts counting `ledger`'s writes (idempotent). */
export function trackCommits(ledger: Ledger): void {
  if (counts.has(ledger)) return;
  const count = { n: 0 };
  counts.set(ledger, count);
  const bump = () => void count.n++;
  const target = ledger as unknown as Record<string, unknown>;
  for (const name of Object.keys(target)) {
    const member = target[name];
    if (NOT_WRITES.has(name) || typeof member !== 'function') continue;
    const fn = member.bind(ledger) as (...args: unknown[]) => unknown;
    target[name] = (...args: unknown[]) => {
      const result = fn(...args);
      if (result instanceof Promise) result.then(bump, bump);
      else bump();
      return result;
    };
  }
}

/** Writes finished through `ledger` so far, or undefined when it is not tracked (then nothing may be cached). */
export function commitCount(ledger: Ledger): number | undefined {
  return counts.get(ledger)?.n;
}

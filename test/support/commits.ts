/**
 * Waiting for what a server's background work (webhook deliveries, retries)
 * leaves in its ledger, without a timer: whatever such work changes, it
 * changes in a write the ledger commits (every write of a process goes through
 * its one queue, `ledger.write` and `ledger.act`). So a condition is checked
 * now and again after each commit, and the wait ends when it holds; only the
 * test's own timeout bounds it.
 */
import type { Ledger } from '../../src/ledger/db.ts';

type Listener = () => void;
const listeners = new WeakMap<Ledger, Set<Listener>>();

/** The listeners told after each write `ledger` commits (or fails), installed on first use. */
function commitListeners(ledger: Ledger): Set<Listener> {
  let set = listeners.get(ledger);
  if (set) return set;
  const current = (set = new Set<Listener>());
  listeners.set(ledger, current);
  const tell = () => current.forEach((l) => l());
  const { write, act } = ledger;
  ledger.write = (job) => write(job).finally(tell);
  ledger.act = (plan) => act(plan).finally(tell);
  return current;
}

/** Resolves once `check` holds: checked at once, then after each write `ledger` commits. */
export function untilCommitted(ledger: Ledger, check: () => boolean | Promise<boolean>): Promise<void> {
  const set = commitListeners(ledger);
  return new Promise((resolve, reject) => {
    let checking = false;
    let again = false;
    const evaluate = async (): Promise<void> => {
      if (checking) return void (again = true);
      checking = true;
      try {
        do {
          again = false;
          if (await check()) {
            set.delete(evaluate);
            return resolve();
          }
        } while (again);
      } catch (e) {
        set.delete(evaluate);
        reject(e);
      } finally {
        checking = false;
      }
    };
    set.add(evaluate);
    void evaluate();
  });
}

/**
 * The ledger as the rest of the service sees it, whatever the engine under it
 * (db.ts opens it; each driver in drivers/ builds one).
 */
import type { Config } from '../config.ts';
import type { ActPlan } from './acts.ts';
import type { Sql } from './sql.ts';
import type { BatchFinisher, WriteJob, WriteOptions, WriteQueue } from './write-queue.ts';

export interface Ledger {
  /** For reads that need no write lock. */
  read: Sql;
  /** Runs `job` inside a write transaction shared with other jobs queued at the same time. */
  write<T>(job: WriteJob<T>, opts?: WriteOptions): Promise<T>;
  /** Commits a governed or metered act (acts.ts) set-oriented with the acts queued beside it; resolves to its result. */
  act<T>(plan: ActPlan<T>): Promise<T>;
  /**
   * Write transactions this process has committed so far. A read cache stamped
   * with it is exact for this process's own writes (docs/configuration.md,
   * "Read caches"); other processes' are caught by the cache's time bound.
   */
  commits(): number;
  /** Sets the step that ends every committed batch inside its transaction (the server's receipts seal). */
  onBatchEnd(finish: BatchFinisher | undefined): void;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export type LedgerOptions = Pick<
  Config,
  | 'DATABASE_URL'
  | 'DATABASE_AUTH_TOKEN'
  | 'DATABASE_SYNCHRONOUS'
  | 'DATABASE_POOL_MAX'
  | 'DATABASE_CONNECT_WAIT_MS'
  | 'DATABASE_WRITE_TIMEOUT_MS'
  | 'WRITE_BATCH_MAX'
  | 'WRITE_BATCH_GATHER_TURNS'
  | 'WAL_CHECKPOINT_MS'
>;

/** Where the ledger reports a failure it survives (a checkpoint that failed is retried on the next tick). */
export type LedgerWarn = (message: string) => void;

/** The Ledger over a driver's write queue and read connection. */
export function queuedLedger(queue: WriteQueue, read: Sql, ping: () => Promise<boolean>, close: () => Promise<void>): Ledger {
  return {
    read,
    write: (job, opts) => queue.push(job, opts),
    act: (plan) => queue.act(plan),
    commits: () => queue.committed,
    onBatchEnd: (finish) => queue.onBatchEnd(finish),
    ping,
    async close() {
      await queue.drain();
      await close();
    },
  };
}

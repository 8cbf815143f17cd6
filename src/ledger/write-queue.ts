/**
 * One write queue per process: group commit.
 *
 * Jobs that arrive while a transaction is open wait; when it commits, all the
 * waiting jobs run in ONE new write transaction, each inside its own SAVEPOINT
 * so that a job that throws undoes only its own writes. A job's promise
 * settles only after the transaction that holds it has committed, so nothing
 * is acknowledged before it is durable.
 *
 * Jobs must touch nothing but the transaction they are given: when the database
 * is busy (another process holds the write lock) the whole batch is retried.
 *
 * The queue talks to a `WriteBackend`: the embedded file through the `libsql`
 * driver (prepared statements, BEGIN IMMEDIATE; a busy file is retried here,
 * asynchronously, never with a blocking busy timeout), or a libSQL server
 * through `@libsql/client` (db.ts).
 */
import { isBusy } from './embedded.ts';
import type { Sql } from './sql.ts';

export type WriteJob<T> = (tx: Sql) => Promise<T>;

interface Pending {
  job: WriteJob<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** The write lock stayed with another process past the retry bound: answered 503, never 500. */
export class DatabaseBusyError extends Error {
  override name = 'DatabaseBusyError';
}

/** One write transaction at a time on one connection. */
export interface WriteBackend {
  /** Opens the write transaction; throws a busy error when another process holds the lock. */
  begin(): Promise<Sql>;
  commit(): Promise<void>;
  /** Ends the transaction without effect; must not throw. */
  rollback(): Promise<void>;
  /** Makes the connection usable again after a busy error. */
  recover(): Promise<void>;
}

const BUSY_RETRY_LIMIT_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WriteQueueOptions {
  batchMax: number;
}

/** Runs last in every batch's transaction that committed at least one job (e.g. the receipts seal). */
export type BatchFinisher = (tx: Sql) => Promise<void>;

export class WriteQueue {
  #backend: WriteBackend;
  #batchMax: number;
  #waiting: Pending[] = [];
  #running: Promise<void> | undefined;
  #finish: BatchFinisher | undefined;

  constructor(backend: WriteBackend, opts: WriteQueueOptions) {
    this.#backend = backend;
    this.#batchMax = opts.batchMax;
  }

  push<T>(job: WriteJob<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ job, resolve: resolve as (v: unknown) => void, reject });
      this.#running ??= this.#loop();
    });
  }

  /** Sets the step that ends every batch inside its transaction; if it throws, the batch fails. */
  onBatchEnd(finish: BatchFinisher | undefined): void {
    this.#finish = finish;
  }

  /** Resolves when every job queued so far has settled. */
  async drain(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #loop(): Promise<void> {
    try {
      // Let jobs queued in the same tick join the first batch.
      await new Promise((r) => setImmediate(r));
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, this.#batchMax);
        await this.#commit(batch);
      }
    } finally {
      this.#running = undefined;
    }
  }

  async #commit(batch: Pending[]): Promise<void> {
    const started = Date.now();
    const backend = this.#backend;
    for (let attempt = 0; ; attempt++) {
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      let open = false;
      try {
        const tx = await backend.begin();
        open = true;
        if (batch.length === 1) {
          // One job alone needs no savepoint: its failure rolls the transaction back.
          try {
            outcomes.push({ ok: true, value: await batch[0]!.job(tx) });
          } catch (error) {
            if (isBusy(error)) throw error;
            outcomes.push({ ok: false, error });
          }
          if (!outcomes[0]!.ok) {
            open = false;
            await backend.rollback();
          }
        } else {
          for (const p of batch) {
            await tx.execute('SAVEPOINT job');
            try {
              const value = await p.job(tx);
              await tx.execute('RELEASE job');
              outcomes.push({ ok: true, value });
            } catch (error) {
              if (isBusy(error)) throw error;
              await tx.execute('ROLLBACK TO job');
              await tx.execute('RELEASE job');
              outcomes.push({ ok: false, error });
            }
          }
        }
        if (open && this.#finish && outcomes.some((o) => o.ok)) await this.#finish(tx);
        if (open) await backend.commit();
        open = false;
      } catch (error) {
        if (open) await backend.rollback();
        if (isBusy(error) && Date.now() - started < BUSY_RETRY_LIMIT_MS) {
          await backend.recover();
          await sleep(1 + Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        const failure = isBusy(error) ? new DatabaseBusyError('the database stayed locked by another writer') : error;
        for (const p of batch) p.reject(failure);
        return;
      }
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
      return;
    }
  }
}

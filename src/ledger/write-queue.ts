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
 * After SQLITE_BUSY the connection is replaced, not reused: the libsql driver
 * leaves the failed `BEGIN IMMEDIATE` statement active, and SQLite then refuses
 * every SAVEPOINT on that connection ("SQL statements in progress") until the
 * statement happens to be garbage-collected.
 */
import type { Client, Transaction } from '@libsql/client';

export type WriteJob<T> = (tx: Transaction) => Promise<T>;

interface Pending {
  job: WriteJob<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class DatabaseBusyError extends Error {
  override name = 'DatabaseBusyError';
}

const BUSY_RETRY_LIMIT_MS = 10_000;

function isBusy(e: unknown): boolean {
  const code = (e as { code?: string; rawCode?: number })?.code ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || /database is locked/i.test(String(e));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WriteQueueOptions {
  batchMax: number;
  /** Applies the per-connection settings to a fresh connection (after a reconnect). */
  configure: (client: Client) => Promise<void>;
}

export class WriteQueue {
  #client: Client;
  #batchMax: number;
  #configure: WriteQueueOptions['configure'];
  #waiting: Pending[] = [];
  #running: Promise<void> | undefined;

  constructor(client: Client, opts: WriteQueueOptions) {
    this.#client = client;
    this.#batchMax = opts.batchMax;
    this.#configure = opts.configure;
  }

  push<T>(job: WriteJob<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ job, resolve: resolve as (v: unknown) => void, reject });
      this.#running ??= this.#loop();
    });
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
    for (let attempt = 0; ; attempt++) {
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      let tx: Transaction | undefined;
      try {
        tx = await this.#client.transaction('write');
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
        await tx.commit();
      } catch (error) {
        try {
          if (tx && !tx.closed) await tx.rollback();
        } catch {
          /* the connection is reset by the driver */
        }
        tx?.close();
        if (isBusy(error) && Date.now() - started < BUSY_RETRY_LIMIT_MS) {
          await this.#client.reconnect();
          await this.#configure(this.#client);
          await sleep(1 + Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        const failure = isBusy(error) ? new DatabaseBusyError('the database stayed locked by another writer') : error;
        for (const p of batch) p.reject(failure);
        return;
      }
      tx.close();
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if (o.ok) p.resolve(o.value);
        else p.reject(o.error);
      });
      return;
    }
  }
}

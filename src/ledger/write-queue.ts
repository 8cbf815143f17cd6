/**
 * One write queue per process: group commit.
 *
 * Writes that arrive while a transaction is open wait; when it commits, all the
 * waiting writes run in ONE new write transaction. A job runs inside its own
 * SAVEPOINT so that a job that throws undoes only its own writes; consecutive
 * acts (acts.ts) are committed together with a constant number of statements.
 * A batch of acts alone, the hop's, takes no savepoint: if its group fails,
 * the transaction is rolled back and the batch runs again with savepoints,
 * each act alone if need be (a savepoint is a round trip on a server).
 * A write's promise settles only after the transaction that holds it has
 * committed, so nothing is acknowledged before it is durable.
 *
 * Jobs must touch nothing but the transaction they are given: when the database
 * is busy (another process holds the write lock) the whole batch is retried.
 *
 * The queue talks to a `WriteBackend`, which its engine's driver supplies
 * (drivers/*): the embedded file (prepared statements, BEGIN IMMEDIATE; a busy
 * file is retried here, asynchronously, never with a blocking busy timeout), a
 * libSQL server, or PostgreSQL (one reserved connection; a serialization
 * failure or deadlock is retried the same way).
 */
import { commitActGroup, type ActOutcome, type ActPlan, type GroupCommitted } from './acts.ts';
import type { Edge } from '../crypto/tiles.ts';
import { allSent, type Sql } from './sql.ts';

export type WriteJob<T> = (tx: Sql) => Promise<T>;

export interface WriteOptions {
  /**
   * The job writes nothing a read cache shows (a background job's lease): its
   * commit does not count in `committed`, so it leaves this process's read
   * caches fresh. Default false.
   */
  unseen?: boolean;
}

/** A queued write: a job (any statements), or an act (committed set-oriented with its neighbours, acts.ts). */
type Work = { job: WriteJob<unknown>; act?: undefined; unseen?: boolean } | { act: ActPlan<unknown>; job?: undefined; unseen?: undefined };

type Pending = Work & {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
};

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
  /** True for an error that means "another writer holds the lock, try the batch again" (SQLITE_BUSY, a deadlock...). */
  isBusy(error: unknown): boolean;
}

const BUSY_RETRY_LIMIT_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Resolves after the event loop's next I/O poll: requests read there have queued their writes. */
const nextTurn = () => new Promise((r) => setImmediate(r));

export interface WriteQueueOptions {
  batchMax: number;
  /**
   * Event-loop turns a batch keeps gathering while writes are still arriving
   * (0: it takes what the first turn queued). Under load the group grows to
   * the writes in flight instead of alternating between two half groups, and
   * its statements, COMMIT and seal are shared by more writes; a lone write
   * waits one turn more.
   */
  gatherTurns: number;
}

/** What a batch's run knows at its end, for its finisher. */
export interface BatchEnd {
  /**
   * The receipts log's head as the batch's last act group left it, read and
   * written under this transaction's lock, when that group appended receipts
   * and no job ran after it (undefined otherwise: read it).
   */
  receiptsHead: Edge | undefined;
}

/** Runs last in every batch's transaction that committed at least one job (e.g. the receipts seal). */
export type BatchFinisher = (tx: Sql, batch: BatchEnd) => Promise<void>;

/** A batch's run: one outcome per write, in order, and what its finisher is told. */
interface Ran extends BatchEnd {
  outcomes: ActOutcome[];
}

export class WriteQueue {
  #backend: WriteBackend;
  #batchMax: number;
  #gatherTurns: number;
  #waiting: Pending[] = [];
  #running: Promise<void> | undefined;
  #finish: BatchFinisher | undefined;
  #committed = 0;

  constructor(backend: WriteBackend, opts: WriteQueueOptions) {
    this.#backend = backend;
    this.#batchMax = opts.batchMax;
    this.#gatherTurns = opts.gatherTurns;
  }

  push<T>(job: WriteJob<T>, opts: WriteOptions = {}): Promise<T> {
    return this.#enqueue<T>({ job, ...(opts.unseen ? { unseen: true } : {}) });
  }

  act<T>(act: ActPlan<T>): Promise<T> {
    return this.#enqueue<T>({ act });
  }

  #enqueue<T>(work: Work): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push({ ...work, resolve: resolve as (v: unknown) => void, reject });
      this.#running ??= this.#loop();
    });
  }

  /** Sets the step that ends every batch inside its transaction; if it throws, the batch fails. */
  onBatchEnd(finish: BatchFinisher | undefined): void {
    this.#finish = finish;
  }

  /** Transactions committed so far: a read cache stamped with it knows whether this process wrote since. */
  get committed(): number {
    return this.#committed;
  }

  /** Resolves when every job queued so far has settled. */
  async drain(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #loop(): Promise<void> {
    try {
      // Let jobs queued in the same tick join the first batch, and those of the next turns while more keep coming.
      await nextTurn();
      for (
        let turn = 0, seen = 0;
        turn < this.#gatherTurns && this.#waiting.length > seen && this.#waiting.length < this.#batchMax;
        turn++
      ) {
        seen = this.#waiting.length;
        await nextTurn();
      }
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
    let guarded = false;
    for (let attempt = 0; ; attempt++) {
      let open = false;
      let outcomes: ActOutcome[];
      try {
        const tx = await backend.begin();
        open = true;
        const ran = await this.#run(tx, batch, guarded);
        if (!ran) {
          // A batch of acts whose group failed, without a savepoint: again, with them.
          await backend.rollback();
          open = false;
          guarded = true;
          continue;
        }
        outcomes = ran.outcomes;
        if (outcomes.some((o) => o.ok)) {
          if (this.#finish) await this.#finish(tx, ran);
          await backend.commit();
          if (batch.some((p, i) => outcomes[i]!.ok && !p.unseen)) this.#committed++;
        } else {
          await backend.rollback();
        }
        open = false;
      } catch (error) {
        if (open) await backend.rollback();
        const busy = backend.isBusy(error);
        if (busy && Date.now() - started < BUSY_RETRY_LIMIT_MS) {
          await backend.recover();
          await sleep(1 + Math.random() * Math.min(50, 2 ** attempt));
          continue;
        }
        const failure = busy ? new DatabaseBusyError('the database stayed locked by another writer') : error;
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

  /**
   * Runs the batch in order: each job in its savepoint, each run of consecutive
   * acts as one group. Unless `guarded`, a batch of acts alone runs as one
   * group with no savepoint, and undefined means that group failed: the
   * transaction must be rolled back and the batch run again, guarded.
   */
  async #run(tx: Sql, batch: Pending[], guarded: boolean): Promise<Ran | undefined> {
    // One job alone needs no savepoint: its failure rolls the transaction back.
    const isBusy = this.#backend.isBusy;
    if (batch.length === 1 && batch[0]!.job)
      return { outcomes: [await attempt(isBusy, () => batch[0]!.job!(tx))], receiptsHead: undefined };
    if (!guarded && batch.every((p) => p.act)) {
      try {
        return await commitActGroup(
          tx,
          batch.map((p) => p.act!),
        );
      } catch (error) {
        if (isBusy(error)) throw error;
        return undefined;
      }
    }
    const outcomes: ActOutcome[] = [];
    let receiptsHead: Edge | undefined;
    for (let i = 0; i < batch.length;) {
      const p = batch[i]!;
      if (p.job) {
        outcomes.push(await inSavepoint(tx, isBusy, () => p.job!(tx)));
        // A job may write anything: the seal reads the head again.
        receiptsHead = undefined;
        i++;
        continue;
      }
      let end = i;
      while (end < batch.length && batch[end]!.act) end++;
      const group = await actGroup(
        tx,
        isBusy,
        batch.slice(i, end).map((q) => q.act!),
      );
      outcomes.push(...group.outcomes);
      receiptsHead = group.receiptsHead ?? receiptsHead;
      i = end;
    }
    return { outcomes, receiptsHead };
  }
}

/** The job's outcome; a busy database is not an outcome but a reason to retry the whole batch. */
async function attempt(isBusy: (e: unknown) => boolean, run: () => Promise<unknown>): Promise<ActOutcome> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    if (isBusy(error)) throw error;
    return { ok: false, error };
  }
}

/**
 * Runs `run` in a savepoint, whose statements are sent with the job's (sql.ts):
 * SAVEPOINT with its first, ROLLBACK TO with RELEASE. On a server the
 * savepoint costs one round trip (its end), not two or three.
 */
async function inSavepoint(tx: Sql, isBusy: (e: unknown) => boolean, run: () => Promise<unknown>): Promise<ActOutcome> {
  const [, outcome] = await allSent([tx.execute('SAVEPOINT job'), attempt(isBusy, run)]);
  await allSent(outcome.ok ? [tx.execute('RELEASE job')] : [tx.execute('ROLLBACK TO job'), tx.execute('RELEASE job')]);
  return outcome;
}

/**
 * Commits consecutive acts together. If the group's statements fail (a
 * constraint one act broke), its writes are undone and each act is committed
 * alone, so that the one bad act fails by itself.
 */
async function actGroup(tx: Sql, isBusy: (e: unknown) => boolean, acts: ActPlan<unknown>[]): Promise<GroupCommitted> {
  const together = await inSavepoint(tx, isBusy, () => commitActGroup(tx, acts));
  if (together.ok) return together.value as GroupCommitted;
  if (acts.length === 1) return { outcomes: [together], receiptsHead: undefined };
  const outcomes: ActOutcome[] = [];
  let receiptsHead: Edge | undefined;
  for (const act of acts) {
    const alone = await inSavepoint(tx, isBusy, () => commitActGroup(tx, [act]));
    if (!alone.ok) {
      outcomes.push(alone);
      continue;
    }
    const committed = alone.value as GroupCommitted;
    outcomes.push(committed.outcomes[0]!);
    receiptsHead = committed.receiptsHead ?? receiptsHead;
  }
  return { outcomes, receiptsHead };
}

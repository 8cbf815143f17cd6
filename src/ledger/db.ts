/**
 * The libSQL connection. Two connections over one database:
 *  - `read`: for queries outside any write;
 *  - the write queue's own single connection, so that per-connection
 *    PRAGMAs hold and only one write transaction per process is ever open.
 * Every write goes through `ledger.write(job)` (see write-queue.ts).
 *
 * The embedded file (`file:`) is driven through the `libsql` driver with
 * statements prepared once per connection (embedded.ts); a libSQL server
 * (`libsql://`, `http(s)://`) through `@libsql/client`.
 */
import { dirname, resolve } from 'node:path';
import { createClient, type Client as RemoteClient, type Transaction as RemoteTransaction } from '@libsql/client';
import type { Config } from '../config.ts';
import { startCheckpointer } from './checkpointer.ts';
import { EmbeddedSql } from './embedded.ts';
import { ensureDir } from '../startup-error.ts';
import { migrate } from './migrate.ts';
import type { ActPlan } from './acts.ts';
import type { Sql } from './sql.ts';
import { WriteQueue, type BatchFinisher, type WriteBackend, type WriteJob } from './write-queue.ts';

export interface Ledger {
  /** For reads that need no write lock. */
  read: Sql;
  /** Runs `job` inside a write transaction shared with other jobs queued at the same time. */
  write<T>(job: WriteJob<T>): Promise<T>;
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

export type LedgerOptions = Pick<Config, 'DATABASE_URL' | 'DATABASE_AUTH_TOKEN' | 'DATABASE_SYNCHRONOUS' | 'WRITE_BATCH_MAX' | 'WRITE_BATCH_GATHER_TURNS' | 'WAL_CHECKPOINT_MS'>;

/** Where the ledger reports a failure it survives (a checkpoint that failed is retried on the next tick). */
export type LedgerWarn = (message: string) => void;

/** Past this many WAL frames (about 64 MiB), the checkpointer waits for a moment without writers and rewinds the WAL. */
const WAL_TRUNCATE_FRAMES = 16_384;

/** Local path of a file: URL, or undefined for a server URL (or `file::memory:`). */
export function localDatabasePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return path === ':memory:' ? undefined : resolve(path.split('?')[0]!);
}

/** The embedded writer: BEGIN IMMEDIATE on one connection; busy is thrown at once (busy_timeout=0). */
function embeddedBackend(db: EmbeddedSql): WriteBackend {
  return {
    async begin() {
      db.run('BEGIN IMMEDIATE');
      return db;
    },
    async commit() {
      db.run('COMMIT');
    },
    async rollback() {
      try {
        if (db.db.inTransaction) db.run('ROLLBACK');
      } catch {
        /* nothing was written */
      }
    },
    async recover() {},
  };
}

/**
 * The server writer. After SQLITE_BUSY its connection is replaced, not reused: the
 * client leaves the failed BEGIN statement active, and SQLite then refuses every
 * SAVEPOINT on that connection until the statement is garbage-collected.
 */
function remoteBackend(client: RemoteClient, configure: () => Promise<void>): WriteBackend {
  let tx: RemoteTransaction | undefined;
  return {
    async begin() {
      tx = await client.transaction('write');
      return tx;
    },
    async commit() {
      await tx!.commit();
      tx!.close();
      tx = undefined;
    },
    async rollback() {
      try {
        if (tx && !tx.closed) await tx.rollback();
      } catch {
        /* the connection is reset by the driver */
      }
      tx?.close();
      tx = undefined;
    },
    async recover() {
      await client.reconnect();
      await configure();
    },
  };
}

export async function openLedger(opts: LedgerOptions, warn: LedgerWarn = (m) => process.emitWarning(m)): Promise<Ledger> {
  const path = localDatabasePath(opts.DATABASE_URL);
  return path ? openEmbedded(path, opts, warn) : openRemote(opts);
}

async function openEmbedded(path: string, opts: LedgerOptions, warn: LedgerWarn): Promise<Ledger> {
  ensureDir(dirname(path));
  const writer = new EmbeddedSql(path);
  // Switching to WAL (a property of the file, set once) may wait for another process's
  // start-up: a blocking wait is fine before we serve.
  writer.exec('PRAGMA busy_timeout=10000');
  writer.exec('PRAGMA journal_mode=WAL');
  writer.exec(`PRAGMA synchronous=${opts.DATABASE_SYNCHRONOUS}`);
  // Checkpoints run on their own thread (checkpointer.ts), never inside a COMMIT on the event loop.
  writer.exec('PRAGMA wal_autocheckpoint=0');
  // Serving: the driver is synchronous, so a busy timeout would block the event loop;
  // the write queue retries SQLITE_BUSY itself, asynchronously (several processes, one file).
  writer.exec('PRAGMA busy_timeout=0');
  const queue = new WriteQueue(embeddedBackend(writer), { batchMax: opts.WRITE_BATCH_MAX, gatherTurns: opts.WRITE_BATCH_GATHER_TURNS });
  await migrate((job) => queue.push(job));
  const read = new EmbeddedSql(path);
  // A WAL reader waits only while another connection recovers or resets the WAL: rare and short.
  read.exec('PRAGMA busy_timeout=200');
  const checkpointer = startCheckpointer({ path, intervalMs: opts.WAL_CHECKPOINT_MS, truncateFrames: WAL_TRUNCATE_FRAMES }, (m) => warn(`WAL checkpoint failed: ${m}`));
  return {
    read,
    write: (job) => queue.push(job),
    act: (plan) => queue.act(plan),
    commits: () => queue.committed,
    onBatchEnd: (finish) => queue.onBatchEnd(finish),
    async ping() {
      try {
        read.run('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await queue.drain();
      await checkpointer.close();
      read.close();
      writer.close();
    },
  };
}

async function openRemote(opts: LedgerOptions): Promise<Ledger> {
  const common = { url: opts.DATABASE_URL, authToken: opts.DATABASE_AUTH_TOKEN, intMode: 'number' as const };
  const writer = createClient({ ...common, concurrency: 1 });
  const queue = new WriteQueue(remoteBackend(writer, async () => {}), { batchMax: opts.WRITE_BATCH_MAX, gatherTurns: opts.WRITE_BATCH_GATHER_TURNS });
  await migrate((job) => queue.push(job));
  return {
    read: writer,
    write: (job) => queue.push(job),
    act: (plan) => queue.act(plan),
    commits: () => queue.committed,
    onBatchEnd: (finish) => queue.onBatchEnd(finish),
    async ping() {
      try {
        await writer.execute('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await queue.drain();
      writer.close();
    },
  };
}

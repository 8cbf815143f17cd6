/**
 * The SQLite driver: the embedded file (the default) and a libSQL server.
 *
 * The embedded file: two connections through the `libsql` driver with
 * statements prepared once (connection.ts), `read` for queries outside any
 * write and the write queue's own, so that per-connection PRAGMAs hold and only
 * one write transaction per process is ever open; the WAL is checkpointed by a
 * thread of its own (checkpointer.ts). A libSQL server (`libsql://`,
 * `http(s)://`, `ws(s)://`) through `@libsql/client`.
 */
import { dirname, resolve } from 'node:path';
import { createClient, type Client as RemoteClient, type InStatement, type Transaction as RemoteTransaction } from '@libsql/client';
import { ensureDir } from '../../../startup-error.ts';
import { queuedLedger, type Ledger, type LedgerOptions, type LedgerWarn } from '../../ledger.ts';
import { migrate } from '../../migrate.ts';
import type { Sql } from '../../sql.ts';
import { WriteQueue, type WriteBackend } from '../../write-queue.ts';
import { startCheckpointer } from './checkpointer.ts';
import { EmbeddedSql, isBusy } from './connection.ts';
import { sqliteDialect } from './dialect.ts';

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
    isBusy,
  };
}

/** A `@libsql/client` client or transaction as the ledger's Sql. */
export function remoteSql(c: RemoteClient | RemoteTransaction): Sql {
  return { execute: (s: InStatement) => c.execute(s), dialect: sqliteDialect, close: () => c.close() };
}

/**
 * The server writer. After SQLITE_BUSY its connection is replaced, not reused: the
 * client leaves the failed BEGIN statement active, and SQLite then refuses every
 * SAVEPOINT on that connection until the statement is garbage-collected.
 */
function remoteBackend(client: RemoteClient): WriteBackend {
  let tx: RemoteTransaction | undefined;
  return {
    async begin() {
      tx = await client.transaction('write');
      return remoteSql(tx);
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
    },
    isBusy,
  };
}

export async function openSqlite(opts: LedgerOptions, warn: LedgerWarn): Promise<Ledger> {
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
  try {
    await migrate((job) => queue.push(job));
  } catch (e) {
    writer.close();
    throw e;
  }
  const read = new EmbeddedSql(path);
  // A WAL reader waits only while another connection recovers or resets the WAL: rare and short.
  read.exec('PRAGMA busy_timeout=200');
  const checkpointer = startCheckpointer({ path, intervalMs: opts.WAL_CHECKPOINT_MS, truncateFrames: WAL_TRUNCATE_FRAMES }, (m) =>
    warn(`WAL checkpoint failed: ${m}`),
  );
  return queuedLedger(
    queue,
    read,
    async () => {
      try {
        read.run('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async () => {
      await checkpointer.close();
      read.close();
      writer.close();
    },
  );
}

async function openRemote(opts: LedgerOptions): Promise<Ledger> {
  const writer = createClient({ url: opts.DATABASE_URL, authToken: opts.DATABASE_AUTH_TOKEN, intMode: 'number', concurrency: 1 });
  const queue = new WriteQueue(remoteBackend(writer), { batchMax: opts.WRITE_BATCH_MAX, gatherTurns: opts.WRITE_BATCH_GATHER_TURNS });
  await migrate((job) => queue.push(job));
  const read = remoteSql(writer);
  return queuedLedger(
    queue,
    read,
    async () => {
      try {
        await writer.execute('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async () => writer.close(),
  );
}

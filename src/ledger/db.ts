/**
 * The libSQL connection. Two clients over one database:
 *  - `read`: a pool, for queries outside any write;
 *  - the write queue's own single-connection client, so that per-connection
 *    PRAGMAs hold and only one write transaction per process is ever open.
 * Every write goes through `ledger.write(job)` (see write-queue.ts).
 */
import { dirname, resolve } from 'node:path';
import { createClient, type Client } from '@libsql/client';
import type { Config } from '../config.ts';
import { ensureDir } from '../startup-error.ts';
import { migrate } from './migrate.ts';
import { WriteQueue, type WriteJob } from './write-queue.ts';

export interface Ledger {
  /** For reads that need no write lock. */
  read: Client;
  /** Runs `job` inside a write transaction shared with other jobs queued at the same time. */
  write<T>(job: WriteJob<T>): Promise<T>;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export type LedgerOptions = Pick<Config, 'DATABASE_URL' | 'DATABASE_AUTH_TOKEN' | 'DATABASE_SYNCHRONOUS' | 'WRITE_BATCH_MAX'>;

/** Local path of a file: URL, or undefined for a server URL. */
export function localDatabasePath(url: string): string | undefined {
  if (!url.startsWith('file:')) return undefined;
  const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return path === ':memory:' ? undefined : resolve(path.split('?')[0]!);
}

export async function openLedger(opts: LedgerOptions): Promise<Ledger> {
  const path = localDatabasePath(opts.DATABASE_URL);
  if (path) ensureDir(dirname(path));
  const common = { url: opts.DATABASE_URL, authToken: opts.DATABASE_AUTH_TOKEN, intMode: 'number' as const };
  const writer = createClient({ ...common, concurrency: 1 });
  if (path) {
    // Start-up may wait for another process's write (a blocking wait is fine before we serve).
    await writer.execute('PRAGMA busy_timeout=10000');
    // WAL lets readers run beside the writer; it is a property of the file, set once.
    await writer.execute('PRAGMA journal_mode=WAL');
    await writer.execute(`PRAGMA synchronous=${opts.DATABASE_SYNCHRONOUS}`);
  }
  await migrate(writer);
  // Serving: the driver is synchronous, so a busy timeout would block the event loop;
  // the write queue retries SQLITE_BUSY itself, asynchronously (several processes, one file).
  const configure = async (client: Client) => {
    if (!path) return;
    await client.execute('PRAGMA busy_timeout=0');
    await client.execute(`PRAGMA synchronous=${opts.DATABASE_SYNCHRONOUS}`);
  };
  await configure(writer);
  const read = path ? createClient({ ...common, concurrency: 8 }) : writer;
  const queue = new WriteQueue(writer, { batchMax: opts.WRITE_BATCH_MAX, configure });
  return {
    read,
    write: (job) => queue.push(job),
    async ping() {
      try {
        await read.execute('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await queue.drain();
      if (read !== writer) read.close();
      writer.close();
    },
  };
}

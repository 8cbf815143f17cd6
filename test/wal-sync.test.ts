/**
 * The WAL synced off the event loop (ledger/wal-sync.ts) and the write queue
 * that answers a batch only once it is on disk (ledger/write-queue.ts), on a
 * real database file. The sync is the real file's, delayed or failed on demand.
 */
import { fdatasync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toProblem } from '../src/api/problem.ts';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { EmbeddedSql } from '../src/ledger/embedded.ts';
import type { Sql } from '../src/ledger/sql.ts';
import { WalSync, WalSyncFailed, type SyncFile } from '../src/ledger/wal-sync.ts';
import { WriteQueue, type WriteBackend } from '../src/ledger/write-queue.ts';
import { tempDir, testEnv } from './support/server.ts';

/** fdatasync held until the test lets it go (or fails it). */
function heldSync() {
  const held: Array<{ fd: number; done: (e: Error | null) => void }> = [];
  const sync: SyncFile = (fd, done) => held.push({ fd, done });
  return {
    sync,
    get pending() {
      return held.length;
    },
    release(error?: Error) {
      const h = held.shift()!;
      if (error) h.done(error);
      else fdatasync(h.fd, h.done);
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 5));

/** A database file in WAL mode whose writer commits at OFF, as the ledger's does. */
function walDatabase() {
  const path = join(tempDir(), 'wal.db');
  const writer = new EmbeddedSql(path);
  writer.exec('PRAGMA journal_mode=WAL');
  writer.exec('PRAGMA synchronous=OFF');
  writer.exec('PRAGMA wal_autocheckpoint=0');
  writer.exec('CREATE TABLE t (n INTEGER)');
  return { path, writer, reader: new EmbeddedSql(path) };
}

function countRows(sql: EmbeddedSql): number {
  return Number(sql.run('SELECT COUNT(*) AS c FROM t').rows[0]!.c);
}

const opened: Array<{ close(): void }> = [];
afterEach(() => {
  for (const c of opened.splice(0)) c.close();
});

describe('WalSync', () => {
  it('coalesces: one sync in flight, and every call made meanwhile waits for the one after it', async () => {
    const { path, writer } = walDatabase();
    opened.push(writer);
    const s = heldSync();
    const wal = new WalSync(path, s.sync);
    const settled: string[] = [];
    const first = wal.synced().then(() => settled.push('first'));
    await tick();
    expect(s.pending).toBe(1);
    const second = wal.synced().then(() => settled.push('second'));
    const third = wal.synced().then(() => settled.push('third'));
    await tick();
    expect(s.pending).toBe(1);
    s.release();
    await first;
    await tick();
    // The first sync began before the second and third calls: it cannot vouch for what they follow.
    expect(settled).toEqual(['first']);
    expect(s.pending).toBe(1);
    s.release();
    await Promise.all([second, third]);
    expect(settled).toEqual(['first', 'second', 'third']);
    expect(s.pending).toBe(0);
    await wal.close();
  });

  it('a failed sync fails every write waiting for it and every later one, without syncing again', async () => {
    const { path, writer } = walDatabase();
    opened.push(writer);
    const s = heldSync();
    const wal = new WalSync(path, s.sync);
    const waiting = wal.synced();
    await tick();
    s.release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(waiting).rejects.toThrow(WalSyncFailed);
    await expect(waiting).rejects.toThrow(/could not be synced to disk: EIO/);
    await expect(wal.synced()).rejects.toBeInstanceOf(WalSyncFailed);
    expect(s.pending).toBe(0);
    expect(wal.failed).toBeInstanceOf(WalSyncFailed);
    // Answered as a 503 that says the write is not acknowledged, never a 500.
    const p = toProblem(wal.failed);
    expect([p.status, p.code]).toEqual([503, 'ledger_not_durable']);
    await wal.close();
  });
});

describe('the write queue with the WAL synced off the event loop', () => {
  function queueOn(db: EmbeddedSql, wal: WalSync) {
    let commits = 0;
    const backend: WriteBackend = {
      async begin() {
        db.exec('BEGIN IMMEDIATE');
        return db;
      },
      async commit() {
        db.exec('COMMIT');
        commits++;
      },
      synced: () => wal.synced(),
      async rollback() {
        if (db.db.inTransaction) db.exec('ROLLBACK');
      },
      async recover() {},
    };
    return { queue: new WriteQueue(backend, { batchMax: 500 }), commits: () => commits };
  }
  const insert = (n: number) => (tx: Sql) => tx.execute({ sql: 'INSERT INTO t (n) VALUES (?)', args: [n] });

  it('answers a write only once its batch is on disk; readers may see it committed a sync earlier', async () => {
    const { path, writer, reader } = walDatabase();
    opened.push(writer, reader);
    const s = heldSync();
    const wal = new WalSync(path, s.sync);
    const { queue } = queueOn(writer, wal);
    let answered = false;
    const write = queue.push(insert(1)).then(() => (answered = true));
    await tick();
    expect(countRows(reader)).toBe(1);
    expect(answered).toBe(false);
    s.release();
    await write;
    expect(answered).toBe(true);
    await queue.drain();
    await wal.close();
  });

  it('commits the next batch while the one before it syncs once enough writes gathered, and never two ahead', async () => {
    const { path, writer, reader } = walDatabase();
    opened.push(writer, reader);
    const s = heldSync();
    const wal = new WalSync(path, s.sync);
    const { queue, commits } = queueOn(writer, wal);
    const first = queue.push(insert(0));
    await tick();
    expect(commits()).toBe(1);
    // A few writes wait for the sync in flight rather than commit a batch of their own.
    const few = [1, 2, 3].map((n) => queue.push(insert(n)));
    await tick();
    expect(commits()).toBe(1);
    // Enough gathered: they commit while the first batch is still syncing.
    const many = Array.from({ length: 20 }, (_, i) => queue.push(insert(10 + i)));
    await tick();
    expect(commits()).toBe(2);
    expect(countRows(reader)).toBe(24);
    // A third batch waits: only one batch is committed ahead of the disk.
    const more = Array.from({ length: 20 }, (_, i) => queue.push(insert(100 + i)));
    await tick();
    expect(commits()).toBe(2);
    s.release();
    await first;
    await tick();
    expect(commits()).toBe(3);
    while (s.pending) {
      s.release();
      await tick();
    }
    await Promise.all([...few, ...many, ...more]);
    expect(countRows(reader)).toBe(44);
    await queue.drain();
    await wal.close();
  });

  it('a failed sync refuses the writes of its batches, and the queue answers later ones with the same failure', async () => {
    const { path, writer, reader } = walDatabase();
    opened.push(writer, reader);
    const s = heldSync();
    const wal = new WalSync(path, s.sync);
    const { queue } = queueOn(writer, wal);
    const write = queue.push(insert(1));
    await tick();
    s.release(new Error('EIO'));
    await expect(write).rejects.toBeInstanceOf(WalSyncFailed);
    await expect(queue.push(insert(2))).rejects.toBeInstanceOf(WalSyncFailed);
    await queue.drain();
    await wal.close();
  });
});

describe('the ledger on its file', () => {
  it('at DATABASE_SYNCHRONOUS=FULL its writer commits at OFF and syncs the WAL itself; at NORMAL it is NORMAL; data survives a reopen', async () => {
    const dir = tempDir();
    const pragma = async (sync: 'FULL' | 'NORMAL') => {
      const ledger = await openLedger(loadConfig({ ...testEnv(dir), DATABASE_SYNCHRONOUS: sync }));
      const level = await ledger.write(async (tx) => Number((await tx.execute('PRAGMA synchronous')).rows[0]![0]));
      await ledger.write((tx) => tx.execute("INSERT INTO schema_migrations (version, applied_at) VALUES ('test-" + sync + "', 'now')"));
      await ledger.synced();
      const ok = await ledger.ping();
      await ledger.close();
      return { level, ok };
    };
    expect(await pragma('FULL')).toEqual({ level: 0, ok: true });
    expect(await pragma('NORMAL')).toEqual({ level: 1, ok: true });
    const ledger = await openLedger(loadConfig(testEnv(dir)));
    const rows = await ledger.read.execute("SELECT version FROM schema_migrations WHERE version LIKE 'test-%' ORDER BY version");
    expect(rows.rows.map((r) => r.version)).toEqual(['test-FULL', 'test-NORMAL']);
    await ledger.close();
  });
});

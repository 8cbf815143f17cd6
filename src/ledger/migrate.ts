/**
 * Versioned migrations: every `NNNN_name.sql` file of an engine's migration
 * folder, applied in name order, each once, each in its own transaction,
 * recorded in `schema_migrations`. Safe to run on every start and from several
 * processes. The embedded file's steps are in ./migrations; PostgreSQL's start
 * from a baseline equal to the embedded schema at 0310 and then take the same
 * numbered steps (drivers/postgres/migrations; test/schema-parity.test.ts).
 *
 * A data migration that SQL cannot express (one that hashes, say) is a
 * `NNNN_name.ts` module exporting `up(tx)`, run the same way.
 *
 * A database that has applied a step this code does not have was migrated by
 * newer code: it is refused (SchemaTooNewError) before anything is written,
 * since this code would misread what the newer steps changed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Client as RemoteClient } from '@libsql/client';
import { sqliteDialect } from './drivers/embedded/dialect.ts';
import type { Sql } from './sql.ts';

/** Runs a job in one write transaction (the ledger's write queue, or a client's own transaction). */
export type InTransaction = <T>(job: (tx: Sql) => Promise<T>) => Promise<T>;

/** An engine's migration steps. */
export interface MigrationSet {
  /** The folder of its NNNN_name.sql|ts files. */
  dir: string;
  /** A statement run first in each step's transaction, so that processes starting together take the steps one at a time. */
  lock?: string;
}

/** The embedded file's (and a libSQL server's) steps: SQLite's write lock already serialises them. */
export const EMBEDDED_MIGRATIONS: MigrationSet = { dir: fileURLToPath(new URL('./migrations/', import.meta.url)) };

export class SchemaTooNewError extends Error {
  override name = 'SchemaTooNewError';
}

export function migrationFiles(set: MigrationSet = EMBEDDED_MIGRATIONS): string[] {
  return readdirSync(set.dir)
    .filter((f) => /^\d{4}_[a-z0-9_-]+\.(sql|ts)$/.test(f))
    .sort();
}

/** Splits a migration file into statements (no semicolons inside our DDL strings). */
function statements(sql: string): string[] {
  return sql
    .replace(/--[^\n]*/g, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Wraps a `@libsql/client` client (tests of old databases) as an InTransaction. */
function clientTransaction(db: RemoteClient): InTransaction {
  return async (job) => {
    const tx = await db.transaction('write');
    try {
      const value = await job({ execute: (s) => tx.execute(s), dialect: sqliteDialect, close: () => tx.close() });
      await tx.commit();
      return value;
    } finally {
      tx.close();
    }
  };
}

export async function migrate(db: RemoteClient | InTransaction, set: MigrationSet = EMBEDDED_MIGRATIONS): Promise<string[]> {
  const inTx: InTransaction = typeof db === 'function' ? db : clientTransaction(db);
  const lock = async (tx: Sql) => {
    if (set.lock) await tx.execute(set.lock);
  };
  const files = migrationFiles(set);
  const known = new Set(files.map((f) => f.replace(/\.(sql|ts)$/, '')));
  await inTx(async (tx) => {
    await lock(tx);
    await tx.execute('CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
    const rs = await tx.execute('SELECT version FROM schema_migrations ORDER BY version');
    const unknown = rs.rows.map((r) => String(r.version)).filter((v) => !known.has(v));
    if (unknown.length > 0) {
      throw new SchemaTooNewError(
        `the database schema is newer than this code: it has migration ${unknown.join(', ')}, which this code does not know; run the newer code, or restore a backup made before it`,
      );
    }
  });
  const applied: string[] = [];
  for (const file of files) {
    const version = file.replace(/\.(sql|ts)$/, '');
    await inTx(async (tx) => {
      await lock(tx);
      const seen = await tx.execute({ sql: 'SELECT 1 FROM schema_migrations WHERE version = ?', args: [version] });
      if (seen.rows.length > 0) return;
      if (file.endsWith('.ts')) {
        const step = (await import(pathToFileURL(set.dir + file).href)) as { up(tx: Sql): Promise<void> };
        await step.up(tx);
      } else {
        for (const stmt of statements(readFileSync(set.dir + file, 'utf8'))) await tx.execute(stmt);
      }
      await tx.execute({
        sql: 'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)',
        args: [version, new Date().toISOString()],
      });
      applied.push(version);
    });
  }
  return applied;
}

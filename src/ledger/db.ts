/**
 * Opens the ledger on the engine `DATABASE_URL` names, through that engine's
 * driver (drivers/*): the embedded libSQL file (`file:`, the default) or a
 * libSQL server (drivers/embedded), or PostgreSQL (`postgres://`,
 * `postgresql://`: drivers/postgres). Every write goes through
 * `ledger.write(job)` or `ledger.act(plan)` (write-queue.ts).
 */
import { createClient } from '@libsql/client';
import { EmbeddedSql } from './drivers/embedded/connection.ts';
import { localDatabasePath, openSqlite, remoteSql } from './drivers/embedded/open.ts';
import { PostgresSql } from './drivers/postgres/connection.ts';
import { postgresDialect } from './drivers/postgres/dialect.ts';
import { connectPool, isPostgresUrl, openPostgres, readColumnTypes } from './drivers/postgres/open.ts';
import type { Ledger, LedgerOptions, LedgerWarn } from './ledger.ts';
import type { Sql } from './sql.ts';

export type { Ledger, LedgerOptions, LedgerWarn } from './ledger.ts';
export { localDatabasePath };

export async function openLedger(opts: LedgerOptions, warn: LedgerWarn = (m) => process.emitWarning(m)): Promise<Ledger> {
  return isPostgresUrl(opts.DATABASE_URL) ? openPostgres(opts) : openSqlite(opts, warn);
}

/** A database URL fit for a message or a log line: its password, if any, replaced by ***. */
export function describeDatabase(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:)[^@/]*@/i, '$1***@').replace(/([?&](?:password|authToken)=)[^&]*/gi, '$1***');
}

/** A connection of its own to an already migrated database. */
export interface Connected extends Sql {
  end(): Promise<void>;
}

/**
 * A connection of its own to the database at `url`, beside any ledger open on
 * it, with no migration: for the command line's copy and for tests that look
 * at the stored rows from another connection.
 */
export async function connectDatabase(url: string): Promise<Connected> {
  if (isPostgresUrl(url)) {
    const pool = connectPool(url, 2);
    const types = await readColumnTypes(pool);
    const sql = new PostgresSql(
      pool,
      postgresDialect(() => types),
    );
    return { dialect: sql.dialect, execute: (s) => sql.execute(s), close() {}, end: () => pool.end({ timeout: 5 }) };
  }
  const path = localDatabasePath(url);
  if (path) {
    const sql = new EmbeddedSql(path);
    sql.exec('PRAGMA busy_timeout=10000');
    return { dialect: sql.dialect, execute: (s) => sql.execute(s), close: () => sql.close(), end: async () => sql.close() };
  }
  const client = createClient({ url, intMode: 'number' });
  return { ...remoteSql(client), end: async () => client.close() };
}

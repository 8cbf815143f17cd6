/**
 * What the ledger needs from a database connection: `execute` and `batch`,
 * shaped like `@libsql/client` so that the same ledger code runs on both
 * back ends:
 *  - the embedded file, through the `libsql` driver directly (embedded.ts):
 *    statements prepared once per connection and cached;
 *  - a libSQL server (`libsql://`), through `@libsql/client`.
 * Inside a write job the connection is the write transaction itself.
 */
import type { InStatement, ResultSet, TransactionMode } from '@libsql/client';

export interface Sql {
  execute(stmt: InStatement): Promise<ResultSet>;
  batch(stmts: InStatement[], mode?: TransactionMode): Promise<ResultSet[]>;
  close(): void;
}

/** A connection for reads (outside any write). */
export type Client = Sql;
/** The write transaction a job runs in. */
export type Transaction = Sql;

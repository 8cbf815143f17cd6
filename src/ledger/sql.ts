/**
 * What the ledger needs from a database connection: `execute` and `batch`,
 * shaped like `@libsql/client` so that the same ledger code runs on both
 * back ends:
 *  - the embedded file, through the `libsql` driver directly (embedded.ts):
 *    statements prepared once per connection and cached;
 *  - a libSQL server (`libsql://`), through `@libsql/client`.
 * Inside a write job the connection is the write transaction itself.
 */
import type { InStatement, InValue, ResultSet, TransactionMode } from '@libsql/client';

export interface Sql {
  execute(stmt: InStatement): Promise<ResultSet>;
  batch(stmts: InStatement[], mode?: TransactionMode): Promise<ResultSet[]>;
  close(): void;
}

/** A connection for reads (outside any write). */
export type Client = Sql;
/** The write transaction a job runs in. */
export type Transaction = Sql;

/**
 * `column` is one of `values`, as a WHERE condition and its argument: for one
 * value (a group of acts on one fuse or one key, the common case) an equality,
 * a primary-key lookup at about a tenth of json_each's cost under load; else
 * a json_each list. Two SQL texts only, so the prepared-statement cache stays small.
 */
export function oneOf(column: string, values: readonly InValue[]): { sql: string; args: InValue[] } {
  return values.length === 1 ? { sql: `${column} = ?`, args: [values[0]!] } : { sql: `${column} IN (SELECT value FROM json_each(?))`, args: [JSON.stringify(values)] };
}

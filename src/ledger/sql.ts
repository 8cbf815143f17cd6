/**
 * What the ledger's area modules need from a database connection, whatever the
 * engine: `execute` (shaped like `@libsql/client`'s: `?` placeholders, rows as
 * objects keyed by column name, integers as numbers, blobs as bytes) and the
 * engine's `dialect`, the few named helpers for what one SQL text cannot say on
 * both engines. Each driver (drivers/embedded, drivers/postgres) implements
 * both; an area module never asks which engine it runs on.
 * Inside a write job the connection is the write transaction itself.
 *
 * Statements issued without awaiting each in turn run in the order they were
 * issued: the embedded file runs each at the call, PostgreSQL pipelines them
 * on the transaction's connection (one round trip for all). A batch sends
 * the statements that need no answer of each other that way and awaits them
 * with `allSent`.
 */
import type { InStatement, InValue, ResultSet } from '@libsql/client';

export interface Sql {
  execute(stmt: InStatement): Promise<ResultSet>;
  readonly dialect: Dialect;
  close(): void;
}

/** A connection for reads (outside any write). */
export type Client = Sql;
/** The write transaction a job runs in. */
export type Transaction = Sql;

/** A piece of SQL and the arguments of its placeholders. */
export interface Fragment {
  sql: string;
  args: InValue[];
}

/**
 * The driver's helpers for what is not portable. Everything else the area
 * modules write is one text for both engines: `ON CONFLICT ... DO NOTHING /
 * DO UPDATE`, `RETURNING`, savepoints, `CASE` instead of two-argument MAX,
 * dates computed in JavaScript and passed as arguments.
 */
export interface Dialect {
  /** The engine, for tests and the schema report; never for a branch in an area module. */
  readonly engine: 'embedded' | 'postgres';
  /**
   * `column` is one of `values`, as a WHERE condition and its argument: an
   * equality for one value (a group of acts on one fuse or one key, the common
   * case), else a list argument (a JSON array on the embedded file, an array on
   * PostgreSQL). Two SQL texts only, so the prepared-statement caches stay small.
   */
  oneOf(column: string, values: readonly InValue[]): Fragment;
  /**
   * The rows of `tuples` (each of `names.length` text values or nulls) as a table
   * expression named `alias` with those column names, for a join.
   */
  tuples(alias: string, names: readonly string[], tuples: ReadonlyArray<readonly InValue[]>): Fragment;
  /** An expression for 32 random hex digits (128 bits on the embedded file, a v4 UUID's 122 on PostgreSQL), one per row. */
  readonly randomHex: string;
  /**
   * A join whose left side drives the loop (one key lookup per left row):
   * `CROSS JOIN` on SQLite, whose planner keeps that order only so; a plain
   * `JOIN` on PostgreSQL.
   */
  readonly orderedJoin: string;
  /** The text of JSON member `field` of the JSON text in `column`. */
  jsonText(column: string, field: string): string;
  /**
   * Appended to a SELECT, inside a write transaction, of a row the transaction
   * then changes and whose value decides what it writes (a log's head): the row
   * stays locked until commit. Empty on the embedded file, whose write lock
   * already covers the whole file.
   */
  readonly forUpdate: string;
  /**
   * The statements that insert `rows` into `table` (`columns` in that order),
   * followed by `tail` (an ON CONFLICT clause): a constant number of statements
   * whatever the row count (multi-row VALUES on the embedded file, one `unnest`
   * of arrays on PostgreSQL).
   */
  insertRows(table: string, columns: readonly string[], rows: ReadonlyArray<readonly InValue[]>, tail: string): InStatement[];
}

/**
 * Inserts `rows` into `table` with the driver's multi-row statements.
 * @example await insertRows(tx, 'hop_counters', ['key_id', 'day', 'hops'], rows, ' ON CONFLICT (key_id, day) DO UPDATE SET hops = hop_counters.hops + excluded.hops')
 */
export async function insertRows(
  tx: Transaction,
  table: string,
  columns: readonly string[],
  rows: ReadonlyArray<readonly InValue[]>,
  tail = '',
): Promise<void> {
  if (rows.length === 0) return;
  for (const stmt of tx.dialect.insertRows(table, columns, rows, tail)) await tx.execute(stmt);
}

/**
 * Awaits work sent together (each a promise of statements issued without
 * waiting), like Promise.all, but answers only once every one has settled,
 * and throws the first failure in the order given. So no statement of a
 * failed piece of work is still to be sent when the caller rolls back; on
 * PostgreSQL the first failure is the cause, those after it only found the
 * transaction aborted.
 */
export async function allSent<T extends readonly unknown[] | []>(work: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(work);
  for (const s of settled) if (s.status === 'rejected') throw s.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as { -readonly [K in keyof T]: Awaited<T[K]> };
}

/** An argument as both drivers bind it: booleans as 0/1, bytes as a Buffer, a Date as its epoch ms; undefined and non-finite numbers refused. */
export function toValue(v: InValue | undefined): unknown {
  if (v === undefined) throw new TypeError('undefined cannot be passed as argument to the database');
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' && !Number.isFinite(v)) throw new RangeError('Only finite numbers can be passed as arguments');
  if (v instanceof ArrayBuffer) return Buffer.from(v);
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof Date) return v.valueOf();
  return v;
}

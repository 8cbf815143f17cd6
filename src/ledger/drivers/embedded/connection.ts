/**
 * One connection to the embedded database file through the `libsql` driver
 * (synchronous, better-sqlite3 style), shaped as `Sql` (sql.ts).
 *
 * Why not `@libsql/client` for the file: it prepares every statement anew and
 * wraps it in promises (0.1-0.2 ms a statement under load). Here a statement is
 * prepared once per connection and cached by its SQL text, so a repeated
 * statement costs microseconds. Callers keep SQL texts constant (placeholders,
 * never interpolated values) so the cache stays small; multi-row statements
 * have one text per row count, which the bound below keeps in check.
 *
 * Results look like `@libsql/client`'s: rows are objects keyed by column name,
 * integers are numbers (a value beyond 2^53 throws, as with intMode 'number'),
 * blobs come back as Uint8Array views.
 */
import Database from 'libsql';
import type { InArgs, InStatement, ResultSet, Row } from '@libsql/client';
import { toValue, type Dialect, type Sql } from '../../sql.ts';
import { sqliteDialect } from './dialect.ts';

type Statement = ReturnType<Database.Database['prepare']>;

interface Prepared {
  stmt: Statement;
  /** Column names when the statement returns rows, else undefined. */
  columns: string[] | undefined;
  /** An INSERT/UPDATE/DELETE ... RETURNING: rows affected = rows returned. */
  writes: boolean;
}

const CACHE_MAX = 2000;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = -MAX_SAFE;

export class EmbeddedSql implements Sql {
  readonly db: Database.Database;
  readonly dialect: Dialect = sqliteDialect;
  #cache = new Map<string, Prepared>();

  constructor(path: string) {
    this.db = new Database(path);
  }

  #prepare(sql: string): Prepared {
    let p = this.#cache.get(sql);
    if (p) return p;
    const stmt = this.db.prepare(sql);
    stmt.safeIntegers(true);
    let columns: string[] | undefined;
    if (stmt.reader) {
      stmt.raw(true);
      columns = stmt.columns().map((c) => c.name);
    }
    p = { stmt, columns, writes: /^\s*(insert|update|delete|replace|with)\b/i.test(sql) };
    if (this.#cache.size >= CACHE_MAX) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(sql, p);
    return p;
  }

  /** Runs one statement synchronously. */
  run(stmt: InStatement): ResultSet {
    if (!this.db.open) throw Object.assign(new Error('the database client is closed'), { code: 'CLIENT_CLOSED' });
    const sql = typeof stmt === 'string' ? stmt : stmt.sql;
    const args = typeof stmt === 'string' ? [] : toArgs(stmt.args);
    const p = this.#prepare(sql);
    if (p.columns) {
      const raw = p.stmt.all(args) as unknown[][];
      const rows = raw.map((r) => toRow(r, p.columns!));
      return result(p.columns, rows, p.writes ? rows.length : 0, undefined);
    }
    const info = p.stmt.run(args);
    return result([], [], info.changes, BigInt(info.lastInsertRowid));
  }

  execute(stmt: InStatement): Promise<ResultSet> {
    try {
      return Promise.resolve(this.run(stmt));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** Runs `stmts` atomically, in a transaction of their own: call only outside a write job (tests, the CLI's copy). */
  async batch(stmts: InStatement[]): Promise<ResultSet[]> {
    this.exec('BEGIN IMMEDIATE');
    try {
      const out = stmts.map((s) => this.run(s));
      this.exec('COMMIT');
      return out;
    } catch (e) {
      if (this.db.inTransaction) this.exec('ROLLBACK');
      throw e;
    }
  }

  exec(sql: string): void {
    if (!this.db.open) throw Object.assign(new Error('the database client is closed'), { code: 'CLIENT_CLOSED' });
    this.db.exec(sql);
  }

  close(): void {
    if (!this.db.open) return;
    this.#cache.clear();
    this.db.close();
  }
}

function toArgs(args: InArgs | undefined): unknown[] | Record<string, unknown> {
  if (!args) return [];
  if (Array.isArray(args)) return args.map(toValue);
  const named: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) named[/^[:@$]/.test(k) ? k.slice(1) : k] = toValue(v);
  return named;
}

function fromValue(v: unknown): unknown {
  if (typeof v === 'bigint') {
    if (v > MAX_SAFE || v < MIN_SAFE) throw new RangeError('Received integer which cannot be safely represented as a JavaScript number');
    return Number(v);
  }
  return v;
}

function toRow(raw: unknown[], columns: string[]): Row {
  const row: Record<string | number, unknown> = {};
  Object.defineProperty(row, 'length', { value: raw.length });
  for (let i = 0; i < raw.length; i++) {
    const value = fromValue(raw[i]);
    Object.defineProperty(row, i, { value });
    const name = columns[i]!;
    if (!Object.hasOwn(row, name)) row[name] = value;
  }
  return row as Row;
}

function result(columns: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return {
    columns,
    columnTypes: columns.map(() => ''),
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({
      columns,
      rows: rows.map((r) => Array.from({ length: r.length }, (_, i) => r[i])),
      rowsAffected,
      lastInsertRowid: lastInsertRowid?.toString() ?? null,
    }),
  };
}

/** True for the errors SQLite returns while another connection holds the lock. */
export function isBusy(e: unknown): boolean {
  const code = (e as { code?: string })?.code ?? '';
  return code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED') || /database is locked/i.test(String(e));
}

/**
 * PostgreSQL connections through postgres.js, shaped as the ledger's `Sql`
 * (sql.ts): `?` placeholders (rewritten to `$n` once per statement text and
 * cached), every statement prepared once per connection, rows as objects keyed
 * by column name, integers as numbers (a value beyond 2^53 throws, as on the
 * embedded file), booleans as 1/0 (as SQLite gives them), bytea as bytes.
 */
import postgres from 'postgres';
import type { InStatement, InValue, ResultSet, Row } from '@libsql/client';
import { toValue, type Dialect, type Sql } from '../../sql.ts';

export type Pool = postgres.Sql<Record<string, never>>;
export type Connection = Pool | postgres.ReservedSql<Record<string, never>>;

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** A bigint or integral numeric as a number; throws past 2^53, like the embedded driver. */
function integer(text: string): number {
  const n = Number(text);
  if (Number.isSafeInteger(n)) return n;
  const b = BigInt(text);
  if (b > MAX_SAFE || b < -MAX_SAFE) throw new RangeError('Received integer which cannot be safely represented as a JavaScript number');
  return Number(b);
}

/** An array parameter in PostgreSQL's text form: each element as `element` writes it, null as NULL. */
function arrayLiteral(xs: readonly unknown[], element: (x: unknown) => string): string {
  let out = '{';
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i];
    if (i > 0) out += ',';
    out += x == null ? 'NULL' : element(x);
  }
  return out + '}';
}

const integerText = (x: unknown) => String(x);
const needsEscape = /[\\"]/;
/** Quoted, so that an empty string, NULL, braces, commas and spaces stay text; a backslash or quote escaped. */
const quotedText = (x: unknown) => {
  const s = String(x);
  return needsEscape.test(s) ? `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : `"${s}"`;
};
/** bytea's hex form, whose backslash the array syntax escapes. */
const quotedHex = (x: unknown) => `"\\\\x${Buffer.from(x as Uint8Array).toString('hex')}"`;
/** An array the ledger only sends: read back, it stays text. */
const sentArray = (oid: number, element: (x: unknown) => string) => ({
  to: oid,
  from: [oid],
  serialize: (xs: readonly unknown[]) => arrayLiteral(xs, element),
  parse: (x: string) => x,
});

/**
 * postgres.js types: int8 and numeric as numbers, bool as 1/0, and the three
 * array types the ledger sends (bytea[], int8[], text[]) under their fixed
 * oids. Left to itself, postgres.js learns array types with a query on every
 * new connection (`fetch_types`), and when a pool is ended while that query
 * runs (after a failover) its failure is an unhandled rejection, which ends
 * the process: the driver is opened with `fetch_types: false` instead.
 */
export const TYPES = {
  int8: { to: 20, from: [20], serialize: integerText, parse: integer },
  numeric: {
    to: 1700,
    from: [1700],
    serialize: integerText,
    parse: (x: string) => (/^-?\d+$/.test(x) ? integer(x) : Number(x)),
  },
  bool: { to: 16, from: [16], serialize: (x: unknown) => (x === true || x === 1 ? 't' : 'f'), parse: (x: string) => (x === 't' ? 1 : 0) },
  byteaArray: sentArray(1001, quotedHex),
  int8Array: sentArray(1016, integerText),
  textArray: sentArray(1009, quotedText),
};

const texts = new Map<string, string>();

/** `sql` with its `?` placeholders numbered ($1, $2...), skipping quoted text and identifiers. */
export function numbered(sql: string): string {
  let out = texts.get(sql);
  if (out !== undefined) return out;
  let n = 0;
  out = sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?/g, (m) => (m === '?' ? `$${++n}` : m));
  if (texts.size >= 5000) texts.clear();
  texts.set(sql, out);
  return out;
}

/** The PostgreSQL type of an array argument, by its elements: bytea[], int8[] or text[]. */
function arrayType(values: readonly unknown[]): number {
  const first = values.find((x) => x != null);
  return first instanceof Uint8Array
    ? TYPES.byteaArray.to
    : typeof first === 'number' || typeof first === 'bigint'
      ? TYPES.int8Array.to
      : TYPES.textArray.to;
}

const WRITES = new Set(['INSERT', 'UPDATE', 'DELETE', 'MERGE']);

/** A statement sent through postgres.js: a promise that can be withdrawn while it waits in the pool's queue. */
export type Statement = PromiseLike<unknown> & { cancel(): void };

export interface TransactionHooks {
  /** The transaction's BEGIN, sent and not waited for: it goes with the first statements, each of which answers only once it has. */
  began?: PromiseLike<unknown> | undefined;
  /** Hears each statement as it is issued, in order. */
  issued?: ((statement: Statement) => void) | undefined;
}

export class PostgresSql implements Sql {
  readonly #conn: Connection;
  readonly dialect: Dialect;
  readonly #began: PromiseLike<unknown> | undefined;
  readonly #issued: ((statement: Statement) => void) | undefined;

  /** On a pool (reads, a connection of its own) or, with `hooks`, a transaction's connection. */
  constructor(conn: Connection, dialect: Dialect, hooks: TransactionHooks = {}) {
    this.#conn = conn;
    this.dialect = dialect;
    this.#began = hooks.began;
    this.#issued = hooks.issued;
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    const sql = typeof stmt === 'string' ? stmt : stmt.sql;
    const raw = typeof stmt === 'string' ? [] : (stmt.args ?? []);
    if (!Array.isArray(raw)) throw new TypeError('named arguments are not supported: use ? placeholders');
    const args = raw.map((v) => {
      if (!Array.isArray(v)) return toValue(v);
      const values = (v as InValue[]).map((x) => (x == null ? null : toValue(x)));
      return this.#conn.typed(values as never, arrayType(values));
    });
    const query = this.#conn.unsafe(numbered(sql), args as postgres.ParameterOrJSON<never>[], { prepare: true });
    this.#issued?.(query);
    const res = this.#began ? (await Promise.all([this.#began, query]))[1] : await query;
    const rows = res as unknown as Row[];
    const columns = res.columns?.map((c) => c.name) ?? [];
    const rowsAffected = WRITES.has(res.command) ? res.count : 0;
    return {
      columns,
      columnTypes: columns.map(() => ''),
      rows,
      rowsAffected,
      lastInsertRowid: undefined,
      toJSON: () => ({ columns, rows: rows.map((r) => columns.map((c) => r[c])), rowsAffected, lastInsertRowid: null }),
    };
  }

  close(): void {}
}

/** SQLSTATEs after which the batch is tried again: serialization failure, deadlock, lock not available. */
const RETRYABLE = new Set(['40001', '40P01', '55P03']);

export function isBusy(e: unknown): boolean {
  return RETRYABLE.has(String((e as { code?: string })?.code ?? ''));
}

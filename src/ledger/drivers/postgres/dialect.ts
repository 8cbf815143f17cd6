/**
 * The PostgreSQL dialect: list arguments as arrays (`= ANY(?)`, `unnest`),
 * multi-row inserts as one `INSERT ... SELECT FROM unnest(...)` whose text is
 * the same whatever the row count (so one prepared statement per table), and
 * row locks for the reads that decide a write (a log's head).
 */
import type { InValue } from '@libsql/client';
import type { Dialect } from '../../sql.ts';

/** Column types by table and column, read from the catalog once the schema is migrated (they type the unnest arrays). */
export type ColumnTypes = ReadonlyMap<string, ReadonlyMap<string, string>>;

/** A list argument: the driver sends a JavaScript array as a PostgreSQL array. */
const list = (values: readonly unknown[]): InValue => values as unknown as InValue;

export function postgresDialect(types: () => ColumnTypes): Dialect {
  const texts = new Map<string, string>();
  return {
    engine: 'postgres',
    oneOf(column, values) {
      return values.length === 1 ? { sql: `${column} = ?`, args: [values[0]!] } : { sql: `${column} = ANY(?)`, args: [list(values)] };
    },
    tuples(alias, names, tuples) {
      return {
        sql: `unnest(${names.map(() => '?::text[]').join(', ')}) AS ${alias}(${names.join(', ')})`,
        args: names.map((_, i) => list(tuples.map((t) => (t[i] == null ? null : String(t[i]))))),
      };
    },
    randomHex: "replace(gen_random_uuid()::text, '-', '')",
    orderedJoin: 'JOIN',
    jsonText: (column, field) => `(${column}::json ->> '${field}')`,
    forUpdate: ' FOR UPDATE',
    insertRows(table, columns, rows, tail) {
      const key = `${table}(${columns.join(',')})${tail}`;
      let sql = texts.get(key);
      if (!sql) {
        const typed = types().get(table);
        const arrays = columns.map((c) => {
          const type = typed?.get(c);
          if (!type) throw new Error(`no column ${table}.${c} in the PostgreSQL schema`);
          return `?::${type}[]`;
        });
        sql = `INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${arrays.join(', ')})${tail}`;
        texts.set(key, sql);
      }
      return [{ sql, args: columns.map((_, i) => list(rows.map((r) => r[i] ?? null))) }];
    },
  };
}

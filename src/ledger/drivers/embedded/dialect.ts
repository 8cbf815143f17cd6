/**
 * The SQLite dialect (the embedded file, and a libSQL server): list arguments
 * as JSON arrays read with json_each, multi-row VALUES. The file's write lock
 * covers the whole database, so a read inside a write needs no row lock.
 */
import type { InValue } from '@libsql/client';
import type { Dialect } from '../../sql.ts';

/** Rows per multi-row INSERT: far below SQLite's bound-parameter limit. */
const ROWS_PER_INSERT = 200;

export const sqliteDialect: Dialect = {
  engine: 'embedded',
  oneOf(column, values) {
    return values.length === 1
      ? { sql: `${column} = ?`, args: [values[0]!] }
      : { sql: `${column} IN (SELECT value FROM json_each(?))`, args: [JSON.stringify(values)] };
  },
  tuples(alias, names, tuples) {
    const columns = names.map((n, i) => `json_extract(value, '$[${i}]') AS ${n}`).join(', ');
    return { sql: `(SELECT ${columns} FROM json_each(?)) AS ${alias}`, args: [JSON.stringify(tuples)] };
  },
  randomHex: 'lower(hex(randomblob(16)))',
  orderedJoin: 'CROSS JOIN',
  jsonText: (column, field) => `json_extract(${column}, '$.${field}')`,
  forUpdate: '',
  insertRows(table, columns, rows, tail) {
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    const out = [];
    for (let off = 0; off < rows.length; off += ROWS_PER_INSERT) {
      const chunk = rows.slice(off, off + ROWS_PER_INSERT);
      out.push({
        sql: `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')}${tail}`,
        args: chunk.flat() as InValue[],
      });
    }
    return out;
  },
};

/**
 * The PostgreSQL driver sends list arguments (`= ANY(?)`, `unnest`) as arrays
 * it writes itself, under the fixed oids of bytea[], int8[] and text[]
 * (connection.ts TYPES), since it no longer asks each new connection for the
 * array types. Every element the ledger can send comes back as it went, read
 * by the server: quotes, backslashes, braces, commas, NULL, the empty string,
 * bytes 0x00 and 0x5c, integers past 32 bits.
 */
import type { InValue } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Connected } from '../src/ledger/db.ts';
import { freshPostgresDatabase } from './support/server.ts';

let db: Connected;
/** A list argument, as the dialect passes one. */
const list = (values: readonly unknown[]): InValue => values as unknown as InValue;

beforeAll(async () => {
  db = await connectDatabase(freshPostgresDatabase());
});

afterAll(async () => {
  await db?.end();
});

const texts = [
  'plain',
  '',
  'a "quoted" word',
  'back\\slash',
  'trailing\\',
  '{braces}',
  'a,comma',
  'NULL',
  ' spaced ',
  'é ✓ 🔑',
  'new\nline',
];

describe('array arguments on PostgreSQL', () => {
  it('send text[] with every character the array syntax gives a meaning to, and NULL as NULL', async () => {
    const values = [...texts, null];
    const rows = (
      await db.execute({
        sql: 'SELECT x, x IS NULL AS missing FROM unnest(?::text[]) WITH ORDINALITY AS t(x, i) ORDER BY i',
        args: [list(values)],
      })
    ).rows;
    expect(rows.map((r) => r.x)).toEqual(values);
    expect(rows.at(-1)!.missing).toBe(1);
  });

  it('send bytea[] byte for byte, and int8[] past 32 bits and below zero', async () => {
    const bytes = [new Uint8Array([0, 1, 0x5c, 0x22, 0xff]), new Uint8Array([]), Buffer.from('\\x00', 'latin1')];
    const got = (
      await db.execute({
        sql: 'SELECT encode(x, ?) AS hex FROM unnest(?::bytea[]) WITH ORDINALITY AS t(x, i) ORDER BY i',
        args: ['hex', list(bytes)],
      })
    ).rows;
    expect(got.map((r) => r.hex)).toEqual(bytes.map((b) => Buffer.from(b).toString('hex')));
    const ints = [0, -1, 2 ** 31, -(2 ** 40), Number.MAX_SAFE_INTEGER];
    const back = (await db.execute({ sql: 'SELECT x FROM unnest(?::int8[]) WITH ORDINALITY AS t(x, i) ORDER BY i', args: [list(ints)] }))
      .rows;
    expect(back.map((r) => r.x)).toEqual(ints);
  });

  it('type an uncast list by its elements, as `= ANY(?)` needs', async () => {
    const n = (sql: string, values: unknown[]) => db.execute({ sql, args: [list(values)] }).then((r) => r.rows[0]!.n);
    expect(await n(`SELECT count(*) AS n FROM (VALUES ('a "quoted" word'), ('x')) v(t) WHERE t = ANY(?)`, texts)).toBe(1);
    expect(await n('SELECT count(*) AS n FROM generate_series(1, 10) g WHERE g = ANY(?)', [2, 3, 2 ** 33])).toBe(2);
    expect(await n("SELECT count(*) AS n FROM (VALUES ('\\x5c00'::bytea)) v(b) WHERE b = ANY(?)", [new Uint8Array([0x5c, 0])])).toBe(1);
  });
});

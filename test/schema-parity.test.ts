/**
 * The two engines' schemas (the embedded file's migrations, and PostgreSQL's
 * baseline plus the same numbered steps) end with the same tables, columns,
 * keys and indexes, so that a step cannot be added to one side only; and both
 * refuse a database that newer code has migrated.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { connectDatabase, openLedger } from '../src/ledger/db.ts';
import { POSTGRES_MIGRATIONS } from '../src/ledger/drivers/postgres/open.ts';
import { migrationFiles } from '../src/ledger/migrate.ts';
import type { Sql } from '../src/ledger/sql.ts';
import { freshPostgresDatabase, tempDir, testEnv } from './support/server.ts';

interface Schema {
  columns: string[];
  keys: string[];
  indexes: string[];
}

const SQLITE_TYPES: Record<string, string> = { TEXT: 'text', INTEGER: 'bigint', BLOB: 'bytea', REAL: 'double precision' };

async function rows(db: Sql, sql: string): Promise<Array<Record<string, unknown>>> {
  return (await db.execute(sql)).rows as unknown as Array<Record<string, unknown>>;
}

async function embeddedSchema(db: Sql): Promise<Schema> {
  const out: Schema = { columns: [], keys: [], indexes: [] };
  for (const t of await rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")) {
    const table = String(t.name);
    const cols = await rows(db, `SELECT name, type, pk FROM pragma_table_info('${table}') ORDER BY cid`);
    for (const c of cols) out.columns.push(`${table}.${c.name} ${SQLITE_TYPES[String(c.type)] ?? c.type}`);
    const pk = cols.filter((c) => Number(c.pk) > 0).sort((a, b) => Number(a.pk) - Number(b.pk));
    out.keys.push(`${table} (${pk.map((c) => c.name).join(', ')})`);
  }
  for (const i of await rows(db, "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")) {
    const cols = await rows(db, `SELECT name FROM pragma_index_info('${String(i.name)}') ORDER BY seqno`);
    const unique = /^CREATE UNIQUE/i.test(String(i.sql));
    const where = /\bWHERE\b(.*)$/is.exec(String(i.sql))?.[1]?.trim();
    out.indexes.push(
      `${unique ? 'unique ' : ''}${i.name} ON ${i.tbl_name} (${cols.map((c) => c.name).join(', ')})${where ? ` WHERE ${where}` : ''}`,
    );
  }
  return normalise(out);
}

async function postgresSchema(db: Sql): Promise<Schema> {
  const out: Schema = { columns: [], keys: [], indexes: [] };
  for (const c of await rows(
    db,
    'SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position',
  )) {
    // SQLite's implicit rowid is a column here (0310_baseline.sql).
    if (c.column_name !== 'rowid') out.columns.push(`${c.table_name}.${c.column_name} ${c.data_type}`);
  }
  for (const k of await rows(
    db,
    `SELECT c.relname AS tbl, (SELECT string_agg(a.attname, ', ' ORDER BY k.ord) FROM unnest(x.indkey) WITH ORDINALITY k(att, ord)
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.att) AS cols
      FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid WHERE x.indisprimary AND c.relnamespace = current_schema()::regnamespace`,
  )) {
    out.keys.push(`${k.tbl} (${k.cols})`);
  }
  for (const i of await rows(
    db,
    'SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT IN (SELECT conname FROM pg_constraint)',
  )) {
    const def = String(i.indexdef);
    const cols = /USING btree \(([^)]*)\)/.exec(def)![1]!;
    const where = /\bWHERE\b(.*)$/s.exec(def)?.[1]?.trim();
    out.indexes.push(
      `${/^CREATE UNIQUE/.test(def) ? 'unique ' : ''}${i.indexname} ON ${i.tablename} (${cols})${where ? ` WHERE ${where}` : ''}`,
    );
  }
  return normalise(out);
}

/** Sorted, with a partial index's condition in one spelling (PostgreSQL writes it back with casts and parentheses). */
function normalise(s: Schema): Schema {
  const where = (x: string) =>
    x.replace(
      /WHERE (.*)$/,
      (_, w: string) =>
        `WHERE ${w
          .replace(/::text/g, '')
          .replace(/[()]/g, '')
          .replace(/\s+/g, ' ')
          .trim()}`,
    );
  // A table without a declared key (SQLite: only its rowid) has none on either side.
  return { columns: [...s.columns].sort(), keys: s.keys.filter((k) => !k.endsWith('()')).sort(), indexes: s.indexes.map(where).sort() };
}

describe('the PostgreSQL schema and the embedded one', () => {
  it('take the same numbered steps after the baseline, and end with the same tables, columns, keys and indexes', async () => {
    const embeddedSteps = migrationFiles().map((f) => f.slice(0, 4));
    const postgresSteps = migrationFiles(POSTGRES_MIGRATIONS).map((f) => f.slice(0, 4));
    expect(postgresSteps[0]).toBe('0310');
    expect(postgresSteps.slice(1)).toEqual(embeddedSteps.filter((v) => v > '0310'));

    const embedded = await openLedger(loadConfig(testEnv(tempDir(), { DATABASE_URL: `file:${tempDir()}/parity.db` })));
    const url = freshPostgresDatabase();
    const postgres = await openLedger(loadConfig(testEnv(tempDir(), { DATABASE_URL: url })));
    try {
      const a = await embeddedSchema(embedded.read);
      const b = await postgresSchema(postgres.read);
      expect(a.columns.length).toBeGreaterThan(300);
      expect(b.columns).toEqual(a.columns);
      expect(b.keys).toEqual(a.keys);
      expect(b.indexes).toEqual(a.indexes);
    } finally {
      await embedded.close();
      await postgres.close();
    }
  });

  it.each(['embedded', 'postgres'] as const)(
    'refuse to start on a schema newer than the code (%s), saying so, and change nothing',
    async (engine) => {
      const url = engine === 'postgres' ? freshPostgresDatabase() : `file:${tempDir()}/newer.db`;
      const first = await openLedger(loadConfig(testEnv(tempDir(), { DATABASE_URL: url })));
      await first.write((tx) =>
        tx.execute({
          sql: 'INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)',
          args: ['9999_from_the_future', new Date().toISOString()],
        }),
      );
      await first.close();
      await expect(openLedger(loadConfig(testEnv(tempDir(), { DATABASE_URL: url })))).rejects.toThrow(
        /schema is newer than this code: it has migration 9999_from_the_future/,
      );
      const db = await connectDatabase(url);
      try {
        expect((await db.execute("SELECT COUNT(*) AS n FROM schema_migrations WHERE version = '9999_from_the_future'")).rows[0]!.n).toBe(1);
      } finally {
        await db.end();
      }
    },
  );
});

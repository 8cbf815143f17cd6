/**
 * The PostgreSQL driver, for more than one machine (docs/scaling.md): several
 * API nodes on one database, a standby to fail over to.
 *
 * `DATABASE_URL=postgres://user@host:port/db` (or `postgresql://`), also in
 * libpq's several-hosts form `postgres://user@h1:p1,h2:p2/db?target_session_attrs=read-write`:
 * after a failover every new connection goes to whichever host now accepts
 * writes. One pool of `DATABASE_POOL_MAX` connections serves the reads; the
 * write queue holds one of them (reserved) for its batches, as on the embedded
 * file: one transaction per batch, a constant number of statements per batch.
 */
import postgres from 'postgres';
import { queuedLedger, type Ledger, type LedgerOptions } from '../../ledger.ts';
import { migrate, type MigrationSet } from '../../migrate.ts';
import { WriteQueue, type WriteBackend } from '../../write-queue.ts';
import { isBusy, PostgresSql, TYPES, type Pool } from './connection.ts';
import { postgresDialect, type ColumnTypes } from './dialect.ts';
import type { Dialect } from '../../sql.ts';
import { fileURLToPath } from 'node:url';

export const POSTGRES_MIGRATIONS: MigrationSet = {
  dir: fileURLToPath(new URL('./migrations/', import.meta.url)),
  // Nodes starting together take the steps one at a time.
  lock: 'SELECT pg_advisory_xact_lock(7265110044)',
};

export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

/** Seconds a new connection may take before the attempt fails (then the next host of a several-hosts URL is tried). */
const CONNECT_TIMEOUT_S = 5;

export function connectPool(url: string, max: number): Pool {
  return postgres(url, {
    max,
    types: TYPES,
    connect_timeout: CONNECT_TIMEOUT_S,
    idle_timeout: 300,
    onnotice: () => {},
    connection: { application_name: 'fusegate' },
  }) as unknown as Pool;
}

/** The write queue's connection: one reserved from the pool, replaced when it breaks. */
function postgresBackend(pool: Pool, dialect: Dialect): WriteBackend & { release(): void } {
  let conn: postgres.ReservedSql<Record<string, never>> | undefined;
  const drop = () => {
    conn?.release();
    conn = undefined;
  };
  return {
    async begin() {
      conn ??= await pool.reserve();
      // Sent now and answered with the batch's first statements (one round trip less); if it fails, they
      // fail with it, and the rollback that follows drops the connection.
      const began = conn.unsafe('BEGIN');
      began.catch(() => {});
      return new PostgresSql(conn, dialect, undefined, began);
    },
    async commit() {
      await conn!.unsafe('COMMIT');
    },
    async rollback() {
      try {
        await conn?.unsafe('ROLLBACK');
      } catch {
        drop();
      }
    },
    async recover() {},
    isBusy,
    release: drop,
  };
}

/** Every column's type, by table (the dialect types its unnest arrays with them). */
export async function readColumnTypes(pool: Pool): Promise<ColumnTypes> {
  const rows = await pool.unsafe(`SELECT c.relname AS tbl, a.attname AS col, format_type(a.atttypid, a.atttypmod) AS type
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`);
  const out = new Map<string, Map<string, string>>();
  for (const r of rows as unknown as Array<{ tbl: string; col: string; type: string }>) {
    let t = out.get(r.tbl);
    if (!t) out.set(r.tbl, (t = new Map()));
    t.set(r.col, r.type);
  }
  return out;
}

export async function openPostgres(opts: LedgerOptions): Promise<Ledger> {
  const pool = connectPool(opts.DATABASE_URL, opts.DATABASE_POOL_MAX);
  let columnTypes: ColumnTypes = new Map();
  const dialect = postgresDialect(() => columnTypes);
  const backend = postgresBackend(pool, dialect);
  const queue = new WriteQueue(backend, { batchMax: opts.WRITE_BATCH_MAX, gatherTurns: opts.WRITE_BATCH_GATHER_TURNS });
  try {
    await migrate((job) => queue.push(job), POSTGRES_MIGRATIONS);
    columnTypes = await readColumnTypes(pool);
  } catch (e) {
    backend.release();
    await pool.end({ timeout: 1 });
    throw e;
  }
  const read = new PostgresSql(pool, dialect, () => void pool.end({ timeout: 5 }));
  return queuedLedger(
    queue,
    read,
    async () => {
      try {
        await pool.unsafe('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async () => {
      backend.release();
      await pool.end({ timeout: 5 });
    },
  );
}

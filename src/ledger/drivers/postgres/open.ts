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
import { ConnectionWait } from './connection-wait.ts';
import { isConnectionLoss, RenewedPool } from './renewed-pool.ts';
import { isBusy, PostgresSql, TYPES, type Pool, type Statement } from './connection.ts';
import { postgresDialect, type ColumnTypes } from './dialect.ts';
import type { Dialect, Sql } from '../../sql.ts';
import { fileURLToPath } from 'node:url';

export const POSTGRES_MIGRATIONS: MigrationSet = {
  dir: fileURLToPath(new URL('./migrations/', import.meta.url)),
  // Nodes starting together take the steps one at a time.
  lock: 'SELECT pg_advisory_xact_lock(7265110044)',
};

export const isPostgresUrl = (url: string): boolean => /^postgres(ql)?:\/\//i.test(url);

/** Seconds a new connection may take before the attempt fails (then the next host of a several-hosts URL is tried). */
const CONNECT_TIMEOUT_S = 5;

/**
 * The `target_session_attrs` postgres.js is given. Its `read-write` looks only at
 * `default_transaction_read_only`, which a hot standby reports `off`: it would
 * keep a standby named before the primary, and every write there would fail.
 * `primary` skips a host in recovery (`in_hot_standby`, reported at the
 * handshake since PostgreSQL 14: no round trip more), which is what a URL asking
 * for `read-write` means here.
 */
function sessionAttrs(url: string): { target_session_attrs?: 'primary' } {
  const asked = /[?&]target_session_attrs=([^&#]*)/.exec(url)?.[1] ?? process.env.PGTARGETSESSIONATTRS;
  return asked === 'read-write' ? { target_session_attrs: 'primary' } : {};
}

export function connectPool(url: string, max: number, onclose?: () => void, opts: { keepForever?: boolean } = {}): Pool {
  return postgres(url, {
    max,
    // postgres.js closes a connection after 30 to 60 minutes by default, between any two statements:
    // on the writer's that would end a batch's transaction under it (a 503 now and then, every node).
    ...(opts.keepForever ? { max_lifetime: null } : {}),
    ...sessionAttrs(url),
    ...(onclose ? { onclose } : {}),
    types: TYPES,
    fetch_types: false,
    connect_timeout: CONNECT_TIMEOUT_S,
    // Seconds before a connection lost with an error is made again: postgres.js grows it to 20 s,
    // which a request waiting for that connection would wait too; capped, a node answers 503 at
    // once while the database is away and serves again within a second of its return.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    idle_timeout: 300,
    onnotice: () => {},
    connection: { application_name: 'fusegate' },
  }) as unknown as Pool;
}

/**
 * The write queue's connection: a pool of one of its own, not one reserved from
 * the read pool (postgres.js 3.4 crashes the process on a write to a reserved
 * connection whose server went away: porsager/postgres#1208). A pool of one
 * connects again by itself after a loss; a transaction never spans two
 * connections, so the batch fails whole and the caller gets 503:
 * - a statement issued after a close of the connection its BEGIN ran on is refused (CONNECTION_CLOSED);
 * - one issued before it, and still waiting in the pool's queue (postgres.js
 *   queues the statements behind one it must prepare first), is withdrawn at the
 *   close. Left there, the pool would send it on its next connection, outside
 *   the transaction and committed on its own, and the batch would wait for it
 *   for as long as no host accepts writes: every write of the node with it.
 *
 * While the connection is open, BEGIN goes with the batch's first statements.
 * Once it was lost, the next BEGIN goes alone and waits for its answer within
 * `wait`'s bound: a connection is being made, and while no host accepts writes
 * that lasts until one does. Past the bound the batch fails (503) with nothing
 * sent but that BEGIN, and when a host answers it after all, its ROLLBACK is the
 * next statement on the connection. After a loss the connection is made in a new
 * pool (renewed-pool.ts: postgres.js may leave the lost one unable to write).
 *
 * Once `limitBatches` is called, a batch that has not ended within its bound
 * from BEGIN is taken as lost too: a host whose machine is gone closes nothing,
 * and its connection would hold the batch until TCP gives up on it. The
 * connection is dropped, which fails the batch's statements (503).
 */
function postgresBackend(
  url: string,
  dialect: Dialect,
  wait: ConnectionWait,
): WriteBackend & { limitBatches(ms: number): void; end(): Promise<void> } {
  let closes = 0;
  /** From a BEGIN answered to the connection's close. */
  let connected = false;
  /** The statements of the batch under way not answered yet. */
  const unanswered = new Set<Statement>();
  const issued = (statement: Statement): void => {
    unanswered.add(statement);
    const answered = () => void unanswered.delete(statement);
    statement.then(answered, answered);
  };
  const writer = new RenewedPool(
    (onclose) => connectPool(url, 1, onclose, { keepForever: true }),
    CONNECT_TIMEOUT_S,
    () => {
      // Called before the pool sends its queue on a new connection; those the close failed already ignore it.
      for (const statement of unanswered) statement.cancel();
      unanswered.clear();
      connectionLost();
    },
  );
  /** The pool of the batch under way. */
  let conn = writer.pool;
  let started = 0;
  const lost = () => Object.assign(new Error('the write connection was lost during the transaction'), { code: 'CONNECTION_CLOSED' });
  /**
   * Rejected once the batch under way lost its connection. Its statements are answered by it as well:
   * postgres.js does not fail every statement of a connection that closes (with several hosts, an error
   * while the connection still counts as being made is passed over), and a batch must never wait on one.
   */
  let dropped: Promise<never> = new Promise(() => {});
  let dropBatch: (e: Error) => void = () => {};
  /** The write connection is gone (closed, or dropped past the bound): the batch under way fails, and the next opens a new pool. */
  const connectionLost = () => {
    closes++;
    connected = false;
    dropBatch(lost());
    writer.lost();
  };
  /** From `limitBatches`: how long a batch may take from its BEGIN to its end. */
  let batchLimitMs: number | undefined;
  let deadline: NodeJS.Timeout | undefined;
  const ended = () => clearTimeout(deadline);
  /** The batch under way outlived its bound: its connection is dropped, and its statements fail with it. */
  const abandon = (pool: Pool) => {
    if (closes !== started) return;
    connectionLost();
    void pool.end({ timeout: 0 });
  };
  /** A statement's answer; any failure once the connection was lost is that loss (a withdrawn statement's own error names a cancel). */
  const answer = async <T>(sent: PromiseLike<T>): Promise<T> => {
    try {
      return await Promise.race([sent, dropped]);
    } catch (e) {
      throw closes !== started ? lost() : e;
    }
  };
  return {
    async begin() {
      started = closes;
      dropped = new Promise<never>((_, reject) => (dropBatch = reject));
      dropped.catch(() => {});
      let began: PromiseLike<unknown> | undefined;
      conn = writer.pool;
      if (connected) {
        // Sent now and answered with the batch's first statements (one round trip less); if it fails, they
        // fail with it, and the rollback that follows ends the batch.
        const sent = conn.unsafe('BEGIN');
        issued(sent);
        began = sent;
      } else {
        const pool = conn;
        await wait.bound(
          () => pool.unsafe('BEGIN'),
          (answered) => void (answered && pool.unsafe('ROLLBACK').catch(() => undefined)),
        );
        connected = closes === started;
      }
      if (batchLimitMs !== undefined) {
        const pool = conn;
        deadline = setTimeout(() => abandon(pool), batchLimitMs);
      }
      const tx = new PostgresSql(conn, dialect, { began, issued });
      // A statement after the connection was replaced would run outside this transaction: refused, the batch fails whole.
      const guarded: Sql = {
        dialect,
        execute(stmt) {
          if (closes !== started) return Promise.reject(lost());
          return answer(tx.execute(stmt));
        },
        close() {},
      };
      return guarded;
    },
    async commit() {
      try {
        if (closes !== started) throw lost();
        const sent = conn.unsafe('COMMIT');
        issued(sent);
        await answer(sent);
      } finally {
        ended();
      }
    },
    async rollback() {
      ended();
      // A lost connection took its transaction with it: nothing to end, and a ROLLBACK sent now would wait
      // for the next connection (without a bound of its own while no host accepts writes).
      if (closes !== started) return;
      await wait.bound(() => conn.unsafe('ROLLBACK')).catch(() => undefined);
    },
    async recover() {},
    isBusy,
    limitBatches(ms) {
      batchLimitMs = ms;
    },
    end: () => writer.end(5),
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

/**
 * Waits for the database to answer once. With several hosts, postgres.js tries
 * them in turn for as long as none accepts (a refused connection is not an
 * error to it), so the wait is bounded here: every host its connect timeout.
 */
async function firstContact(pool: Pool, url: string): Promise<void> {
  const hosts = (/^[^:]+:\/\/(?:[^@/]*@)?([^/?#]*)/.exec(url)?.[1] ?? '').split(',').length;
  const ms = hosts * CONNECT_TIMEOUT_S * 1000;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no host of it accepted a connection within ${ms / 1000} s`)), ms);
  });
  try {
    await Promise.race([pool.unsafe('SELECT 1'), late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function openPostgres(opts: LedgerOptions): Promise<Ledger> {
  // One connection of DATABASE_POOL_MAX is the write queue's, the others serve reads.
  const readPool = new RenewedPool((onclose) => connectPool(opts.DATABASE_URL, opts.DATABASE_POOL_MAX - 1, onclose), CONNECT_TIMEOUT_S);
  const pool = readPool.pool;
  let columnTypes: ColumnTypes = new Map();
  const dialect = postgresDialect(() => columnTypes);
  const backend = postgresBackend(opts.DATABASE_URL, dialect, new ConnectionWait(opts.DATABASE_CONNECT_WAIT_MS));
  const queue = new WriteQueue(backend, { batchMax: opts.WRITE_BATCH_MAX, gatherTurns: opts.WRITE_BATCH_GATHER_TURNS });
  try {
    await firstContact(pool, opts.DATABASE_URL);
    await migrate((job) => queue.push(job), POSTGRES_MIGRATIONS);
    columnTypes = await readColumnTypes(pool);
    // After the migrations, which may rewrite a large table.
    backend.limitBatches(opts.DATABASE_WRITE_TIMEOUT_MS);
  } catch (e) {
    await Promise.all([backend.end(), pool.end({ timeout: 1 })]);
    throw e;
  }
  // Reads run on the read pool of the moment: a read that lost its connection has the next ones on a new pool.
  let readsOn = pool;
  let reads = new PostgresSql(pool, dialect);
  const readsNow = () => {
    const p = readPool.pool;
    if (p !== readsOn) [readsOn, reads] = [p, new PostgresSql(p, dialect)];
    return reads;
  };
  const lostRead = (e: unknown) => void (isConnectionLoss(e) && readPool.lost());
  // A read waits for a connection within the same bound as a write (a timer per read: cheap beside its round trip).
  const readWait = new ConnectionWait(opts.DATABASE_CONNECT_WAIT_MS);
  const read: Sql = {
    dialect,
    execute: (stmt) => readWait.bound(() => readsNow().execute(stmt), undefined, lostRead),
    close: () => void readPool.end(5),
  };
  return queuedLedger(
    queue,
    read,
    async () => {
      try {
        await read.execute('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async () => {
      await Promise.all([backend.end(), readPool.end(5)]);
    },
  );
}

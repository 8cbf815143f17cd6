/**
 * PostgreSQL beside the embedded file (issue 44): a throw-away cluster of its
 * own (test/support/postgres-cluster.ts, durable settings: fsync and
 * synchronous_commit on), then, in alternating rounds at BENCH_CONNECTIONS:
 *
 *   one API node on PostgreSQL against the embedded default, each its own
 *   process: the hop, pre-finality evaluate and ASTL publish (ratios; the
 *   PostgreSQL hop's p99);
 *   two API nodes on one PostgreSQL (half the connections each, one key, one
 *   fuse) against that one node;
 *   the bytes PostgreSQL stores per hop (pg_total_relation_size of every table
 *   before and after the one-node hop load), beside the embedded file's;
 *
 * and the engines' own floors, so that a figure reads against what the engine
 * gives at all: the ledger's act with no HTTP (a receipt minted under the
 * lock and appended to the receipts log, group commit: acts.ts through
 * commitReceipts), and a bare INSERT ... COMMIT loop on one connection (and,
 * on PostgreSQL, on BENCH_CONNECTIONS connections at once).
 */
import Database from 'libsql';
import postgres from 'postgres';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { loadConfig } from '../src/config.ts';
import { loadKeyring } from '../src/crypto/keys.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { commitReceipts } from '../test/support/receipts.ts';
import { postgresBin, removeCluster, startCluster, type Cluster } from '../test/support/postgres-cluster.ts';
import { receiptsLogSize, storedBytes } from './gate.ts';
import {
  BENCH_CONNECTIONS,
  BENCH_SECONDS,
  fmt,
  hopLoad,
  load,
  pairedLoads,
  removeDir,
  report,
  spawnServer,
  type HttpLoad,
  type LoadResult,
  type Spawned,
  EVALUATE_GO,
} from './lib.ts';

const SECTION = 'postgres';
/** Issue 44's targets for one PostgreSQL node against the embedded default. */
const TARGET = { ratio: 0.5, hopP99Ms: 20 };
/** Both PostgreSQL nodes publish under one URL, as nodes behind one balancer do. */
const BASE_URL = 'http://gate.invalid';

const keyed = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

/** The three acts compared, for a server's own key and fuse. */
async function actLoads(server: Spawned): Promise<HttpLoad[]> {
  const { key, load: hop } = await hopLoad(server, 'POST /v1/fuse/hop');
  let n = 0;
  return [
    hop,
    {
      name: 'POST /v1/prefinality/evaluate (GO)',
      method: 'POST',
      path: '/v1/prefinality/evaluate',
      headers: keyed(key),
      body: EVALUATE_GO,
    },
    {
      name: 'POST /api/v1/astl/publish',
      method: 'POST',
      path: '/api/v1/astl/publish',
      headers: keyed(key),
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ entity: `bench:${n++ % 1000}`, preset: 'agentic' }) }),
    },
  ];
}

/** Bytes of every table of the database, with their indexes and TOAST. */
async function postgresBytes(sql: postgres.Sql): Promise<number> {
  const [r] =
    await sql`SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace`;
  return Number(r!.bytes);
}

/** Two loads at once, one per node, as one result: the sum of their throughputs, the worse p99. */
async function bothNodes(a: Spawned, b: Spawned, l: HttpLoad): Promise<LoadResult> {
  const half = Math.max(1, Math.floor(BENCH_CONNECTIONS / 2));
  const [x, y] = await Promise.all([load(a.url, l, half), load(b.url, l, BENCH_CONNECTIONS - half)]);
  return { rps: x.rps + y.rps, p99: Math.max(x.p99, y.p99), non2xx: x.non2xx + y.non2xx, errors: x.errors + y.errors };
}

/** Calls of `step` per second, BENCH_CONNECTIONS of them in flight, for BENCH_SECONDS. */
async function perSecond(step: () => Promise<unknown>, concurrency = BENCH_CONNECTIONS): Promise<number> {
  const end = performance.now() + BENCH_SECONDS * 1000;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await step();
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

/** The ledger's act with no HTTP: acts/s and commits/s (batches) at BENCH_CONNECTIONS acts in flight. */
async function actFloor(ledger: Ledger, signingKeyFile: string): Promise<{ acts: number; commits: number }> {
  const issuer = { config: { BASE_URL }, keyring: await loadKeyring({ SIGNING_KEY_FILE: signingKeyFile }) };
  let n = 0;
  const commitsBefore = ledger.commits();
  const started = performance.now();
  const acts = await perSecond(() =>
    commitReceipts(ledger, issuer, [{ kind: 'hop', decision: 'PERMIT', subject: `fuse_floor_${n++ % 100}`, key_id: 'key_floor' }]),
  );
  const commits = (ledger.commits() - commitsBefore) / ((performance.now() - started) / 1000);
  return { acts, commits };
}

/** Bare INSERT ... COMMIT on the embedded file (synchronous=FULL, as the service), one transaction after another. */
function embeddedCommitLoop(dir: string): number {
  const db = new Database(join(dir, 'commit-loop.db'));
  db.exec('PRAGMA journal_mode=WAL');
  db.exec('PRAGMA synchronous=FULL');
  db.exec('CREATE TABLE floor (n INTEGER, at TEXT)');
  const insert = db.prepare('INSERT INTO floor VALUES (?, ?)');
  const end = performance.now() + BENCH_SECONDS * 1000;
  const started = performance.now();
  let n = 0;
  while (performance.now() < end) {
    db.exec('BEGIN IMMEDIATE');
    insert.run([n++, new Date().toISOString()]);
    db.exec('COMMIT');
  }
  const rate = n / ((performance.now() - started) / 1000);
  db.close();
  return rate;
}

/** Bare INSERT ... COMMIT on PostgreSQL, on `connections` connections at once. */
async function postgresCommitLoop(url: string, connections: number): Promise<number> {
  const sql = postgres(url, { max: connections, onnotice: () => {} });
  try {
    await sql`CREATE TABLE IF NOT EXISTS floor (n bigint, at text)`;
    let n = 0;
    return await perSecond(() => sql.begin((tx) => tx`INSERT INTO floor VALUES (${n++}, ${new Date().toISOString()})`), connections);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function compareOneNode(embedded: Spawned, pg: Spawned, sql: postgres.Sql): Promise<void> {
  const [embeddedLoads, pgLoads] = [await actLoads(embedded), await actLoads(pg)];
  for (let i = 0; i < pgLoads.length; i++) {
    const l = pgLoads[i]!;
    const isHop = i === 0;
    const before = isHop
      ? {
          pg: await postgresBytes(sql),
          pgSize: await receiptsLogSize(pg.url),
          embedded: storedBytes(embedded.env.DATABASE_URL!),
          embeddedSize: await receiptsLogSize(embedded.url),
        }
      : undefined;
    const { base, ours, range } = await pairedLoads(
      l.name,
      () => load(embedded.url, embeddedLoads[i]!),
      () => load(pg.url, l),
    );
    report(
      SECTION,
      `${l.name} on PostgreSQL, one node (baseline: the embedded file)`,
      fmt.rps(ours.rps),
      fmt.rps(base.rps),
      fmt.ratio(ours.rps, base.rps) + range,
      {
        text: `>= ${TARGET.ratio.toFixed(2)}x`,
        met: ours.rps >= TARGET.ratio * base.rps,
      },
    );
    report(
      SECTION,
      `${l.name} p99 on PostgreSQL, one node`,
      fmt.ms(ours.p99),
      fmt.ms(base.p99),
      fmt.ratio(ours.p99, base.p99),
      isHop ? { text: `<= ${TARGET.hopP99Ms} ms`, met: ours.p99 <= TARGET.hopP99Ms } : undefined,
    );
    if (before) {
      const hops = (await receiptsLogSize(pg.url)) - before.pgSize;
      const perHop = ((await postgresBytes(sql)) - before.pg) / hops;
      const embeddedPerHop =
        (storedBytes(embedded.env.DATABASE_URL!) - before.embedded) / ((await receiptsLogSize(embedded.url)) - before.embeddedSize);
      report(
        SECTION,
        `stored bytes per hop on PostgreSQL (${hops.toLocaleString('en-US')} hops, pg_total_relation_size, no VACUUM; baseline: the embedded file, WAL checkpointed)`,
        `${Math.round(perHop)} B`,
        `${Math.round(embeddedPerHop)} B`,
        fmt.ratio(perHop, embeddedPerHop),
      );
    }
  }
}

async function compareTwoNodes(pg: Spawned): Promise<void> {
  const second = await spawnServer({ DATABASE_URL: pg.env.DATABASE_URL!, SIGNING_KEY_FILE: pg.env.SIGNING_KEY_FILE!, BASE_URL });
  try {
    const { load: hop } = await hopLoad(pg, 'POST /v1/fuse/hop');
    const { base, ours, range } = await pairedLoads(
      'two nodes',
      () => load(pg.url, hop),
      () => bothNodes(pg, second, hop),
    );
    report(
      SECTION,
      `POST /v1/fuse/hop on two API nodes, one PostgreSQL (baseline: one node)`,
      fmt.rps(ours.rps),
      fmt.rps(base.rps),
      fmt.ratio(ours.rps, base.rps) + range,
    );
    report(
      SECTION,
      'POST /v1/fuse/hop p99 on two API nodes (the worse node)',
      fmt.ms(ours.p99),
      fmt.ms(base.p99),
      fmt.ratio(ours.p99, base.p99),
    );
  } finally {
    await second.stop();
  }
}

async function floors(cluster: Cluster, embeddedKeys: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fusegate-bench-pg-floor-'));
  cluster.psql('CREATE DATABASE fg_floor');
  cluster.psql('CREATE DATABASE fg_commit_loop');
  const options = (DATABASE_URL: string) => loadConfig({ DATABASE_URL, SIGNING_KEY_FILE: embeddedKeys, LOG_LEVEL: 'silent' });
  try {
    const embedded = await openLedger(options(`file:${join(dir, 'act-floor.db')}`));
    const pg = await openLedger(options(cluster.url('fg_floor')));
    try {
      let e = { acts: 0, commits: 0 };
      let p = { acts: 0, commits: 0 };
      // Alternating, as the HTTP rounds.
      const { base, ours, range } = await pairedLoads(
        'act floor',
        async () => ((e = await actFloor(embedded, embeddedKeys)), { rps: e.acts, p99: 0, non2xx: 0, errors: 0 }),
        async () => ((p = await actFloor(pg, embeddedKeys)), { rps: p.acts, p99: 0, non2xx: 0, errors: 0 }),
      );
      report(
        SECTION,
        'floor: the ledger act with no HTTP (receipt + receipts log, group commit), on PostgreSQL',
        `${Math.round(ours.rps).toLocaleString('en-US')} acts/s`,
        `${Math.round(base.rps).toLocaleString('en-US')} acts/s`,
        fmt.ratio(ours.rps, base.rps) + range,
      );
      report(
        SECTION,
        'floor: commits/s (batches) of that act load, PostgreSQL vs embedded (last round)',
        `${Math.round(p.commits)} commits/s`,
        `${Math.round(e.commits)} commits/s`,
        fmt.ratio(p.commits, e.commits),
      );
    } finally {
      await Promise.all([embedded.close(), pg.close()]);
    }
    const embeddedLoop = embeddedCommitLoop(dir);
    const pgLoop = await postgresCommitLoop(cluster.url('fg_commit_loop'), 1);
    report(
      SECTION,
      'floor: bare INSERT ... COMMIT, one connection, PostgreSQL (baseline: the embedded file, FULL)',
      `${Math.round(pgLoop)} commits/s`,
      `${Math.round(embeddedLoop)} commits/s`,
      fmt.ratio(pgLoop, embeddedLoop),
    );
    const pgMany = await postgresCommitLoop(cluster.url('fg_commit_loop'), BENCH_CONNECTIONS);
    report(
      SECTION,
      `floor: bare INSERT ... COMMIT on ${BENCH_CONNECTIONS} PostgreSQL connections at once (baseline: one connection)`,
      `${Math.round(pgMany)} commits/s`,
      `${Math.round(pgLoop)} commits/s`,
      fmt.ratio(pgMany, pgLoop),
    );
  } finally {
    removeDir(dir);
  }
}

export async function benchPostgres(): Promise<void> {
  if (!postgresBin()) {
    console.log("  skipped: PostgreSQL's server programs are not installed (apt-get install postgresql, or set PG_BIN)");
    return;
  }
  const cluster = await startCluster({ settings: { synchronous_commit: 'on', fsync: 'on' } });
  try {
    cluster.psql('CREATE DATABASE fg_bench');
    const embedded = await spawnServer();
    const pg = await spawnServer({ DATABASE_URL: cluster.url('fg_bench'), BASE_URL });
    const sql = postgres(cluster.url('fg_bench'), { max: 1, onnotice: () => {} });
    try {
      await compareOneNode(embedded, pg, sql);
      await compareTwoNodes(pg);
      await floors(cluster, embedded.env.SIGNING_KEY_FILE!);
    } finally {
      await sql.end({ timeout: 5 });
      await Promise.all([embedded.stop(), pg.stop()]);
    }
  } finally {
    removeCluster(cluster);
  }
}

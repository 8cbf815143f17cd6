/**
 * Bad configuration and faults on PostgreSQL (issue 44 item 4,
 * docs/postgresql.md): a database that cannot be reached at start stops the
 * server and the CLI with one line naming it, never its password; a schema newer
 * than the code is refused at start with nothing written; a database lost under
 * a running server makes /health and governed acts answer 503 with Retry-After
 * (fail closed), and service comes back by itself once the database does; a
 * standby named before the primary in a read-write URL is passed over. The
 * time from a promotion to the first answer is printed, never asserted.
 */
import { execFileSync } from 'node:child_process';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { toProblem } from '../src/api/problem.ts';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { allSent } from '../src/ledger/sql.ts';
import { PROCESS_TEST_TIMEOUT_MS, cleanEnv, run, runCli } from './support/cli.ts';
import { freePort, postgresBin, postgresDir, removeCluster, runPg, startCluster, type Cluster } from './support/postgres-cluster.ts';
import { freshPostgresDatabase, holdCacheClock, startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';

const serve = (env: Record<string, string>) =>
  run(process.execPath, ['src/server.ts'], { ...cleanEnv(), ...testEnv(tempDir(), env), LOG_LEVEL: 'error' });

const psql = (db: string, sql: string) =>
  execFileSync(
    'psql',
    ['-X', '-q', '-t', '-A', '-h', '127.0.0.1', '-p', String(inject('postgresPort')), '-U', 'postgres', '-d', db, '-c', sql],
    { encoding: 'utf8' },
  ).trim();

/** Asks again, a moment apart, until the answer is the one awaited (the hook's timeout bounds it). */
async function until(ask: () => Promise<Response>, done: (r: Response) => boolean): Promise<Response> {
  for (;;) {
    const r = await ask();
    if (done(r)) return r;
    await r.body?.cancel();
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** A 503 ledger_unavailable problem with a Retry-After: the answer of a request the database cannot serve. */
async function expectUnavailable(r: Response): Promise<void> {
  expect(r.status).toBe(503);
  expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect((await r.json()).code).toBe('ledger_unavailable');
}

describe('start-up on a database that cannot be used', () => {
  it(
    'unreachable: the server exits 2 naming the database, its password hidden',
    async () => {
      const [p1, p2] = [await freePort(), await freePort()];
      const r = await serve({
        DATABASE_URL: `postgres://fusegate:s3cret-pw@127.0.0.1:${p1},127.0.0.1:${p2}/fusegate?target_session_attrs=read-write`,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`cannot open the database postgres://fusegate:***@127.0.0.1:${p1},127.0.0.1:${p2}/fusegate`);
      expect(r.stderr).not.toContain('s3cret');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'unreachable: the CLI says the same',
    async () => {
      const port = await freePort();
      const r = await runCli(
        ['keys', 'list'],
        testEnv(tempDir(), { DATABASE_URL: `postgresql://fusegate:s3cret-pw@127.0.0.1:${port}/fusegate` }),
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`postgresql://fusegate:***@127.0.0.1:${port}/fusegate`);
      expect(r.stderr).not.toContain('s3cret');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'migrated by newer code: refused, saying so, and nothing written',
    async () => {
      const url = freshPostgresDatabase();
      const db = new URL(url).pathname.slice(1);
      psql(db, "INSERT INTO schema_migrations (version, applied_at) VALUES ('9990_from_newer_code', '2030-01-01T00:00:00.000Z')");
      const before = psql(db, "SELECT string_agg(version, ',' ORDER BY version) FROM schema_migrations");
      const r = await serve({ DATABASE_URL: url });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/the database schema is newer than this code: it has migration 9990_from_newer_code/);
      expect(psql(db, "SELECT string_agg(version, ',' ORDER BY version) FROM schema_migrations")).toBe(before);
      expect(psql(db, 'SELECT count(*) FROM leases')).toBe('0');
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('the database lost under a running server', () => {
  let cluster: Cluster;
  let s: TestServer;
  let clock: ReturnType<typeof holdCacheClock>;
  let key: string;
  let fuseId: string;
  const settings = { fsync: 'off', synchronous_commit: 'off' };

  beforeAll(async () => {
    cluster = await startCluster({ settings });
    cluster.psql('CREATE DATABASE fusegate');
    s = await startTestServer({ DATABASE_URL: cluster.url('fusegate') });
    // /health reuses its probes for a second of this clock: each look below moves it past that.
    clock = holdCacheClock(s);
    key = (await s.newKey('faults')).secret;
    fuseId = (await (await s.fetch('/v1/fuses', { json: {}, key })).json()).fuse_id;
  });
  afterAll(async () => {
    await s?.stop();
    if (cluster) removeCluster(cluster);
  });

  const health = async () => {
    clock.passBound(2000);
    return s.fetch('/health');
  };
  const hop = () => s.fetch('/v1/fuse/hop', { json: { fuse_id: fuseId }, key });

  it('answers /health 503 and governed acts 503 with Retry-After, never a PERMIT', async () => {
    expect((await hop()).status).toBe(200);
    expect((await health()).status).toBe(200);
    cluster.stop('fast');
    const h = await until(health, (r) => r.status === 503);
    expect((await h.json()).database).not.toBe('ok');
    for (let i = 0; i < 3; i++) await expectUnavailable(await hop());
  }, 120_000);

  it('serves again once the database is back, without a restart', async () => {
    await startCluster({ dataDir: join(cluster.dir, 'data'), port: cluster.port, settings });
    const r = await until(hop, (x) => x.status !== 503);
    expect(r.status).toBe(200);
    expect((await r.json()).decision).toBe('PERMIT');
    await until(health, (x) => x.status === 200);
  }, 120_000);
});

describe("the write connection lost in the middle of a batch's statements", () => {
  it('withdraws the statements still queued: the write fails 503 at once, and none runs later outside its transaction', async () => {
    const db = new URL(freshPostgresDatabase()).pathname.slice(1);
    psql(db, 'CREATE TABLE probe (n int); CREATE TABLE locked (n int)');
    // A several-hosts URL whose second host never answers: postgres.js tries the hosts again and again while none lets it in.
    const url = `postgres://postgres@127.0.0.1:${inject('postgresPort')},127.0.0.1:${await freePort()}/${db}?target_session_attrs=read-write`;
    const ledger = await openLedger(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' }));
    const holder = postgres(url, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const locked = new Promise<void>(
      (hold) =>
        void holder.begin(async (t) => {
          await t.unsafe('LOCK TABLE locked IN ACCESS EXCLUSIVE MODE');
          hold();
          await held;
        }),
    );
    const connections = (allow: boolean) => psql('postgres', `ALTER DATABASE ${db} WITH ALLOW_CONNECTIONS ${allow}`);
    try {
      await locked;
      // A statement the connection has not prepared goes out alone, to be described; postgres.js queues the ones behind
      // it in the pool. This one waits for the lock while it is described, with the INSERT queued behind it.
      const write = ledger.write((tx) =>
        allSent([
          tx.execute({ sql: 'SELECT n FROM locked WHERE n = ?', args: [1] }),
          tx.execute({ sql: 'INSERT INTO probe VALUES (?)', args: [1] }),
        ]),
      );
      const waiting = () => psql(db, "SELECT pid FROM pg_stat_activity WHERE application_name = 'fusegate' AND wait_event_type = 'Lock'");
      let pid = '';
      while (!(pid = waiting())) await new Promise((r) => setTimeout(r, 20));
      // No new connection is let in: a statement left queued would wait for one, and the batch with it.
      connections(false);
      psql('postgres', `SELECT pg_terminate_backend(${pid})`);
      expect(
        toProblem(
          await write.then(
            () => undefined,
            (e: unknown) => e,
          ),
        ).status,
      ).toBe(503);
      connections(true);
      release();
      await ledger.write((tx) => tx.execute({ sql: 'INSERT INTO probe VALUES (?)', args: [2] }));
      // Left queued, the first INSERT would have gone out on a later connection, on its own, and been committed.
      expect(psql(db, "SELECT string_agg(n::text, ',' ORDER BY n) FROM probe")).toBe('2');
    } finally {
      connections(true);
      release();
      await Promise.all([ledger.close(), holder.end({ timeout: 5 })]);
    }
  }, 120_000);
});

/**
 * A TCP relay to the test cluster whose connections can be frozen: what was
 * open stops carrying bytes either way and is never closed, as when the
 * primary's machine is gone. Connections made after the freeze are relayed.
 */
async function freezableRelay(port: number): Promise<{ port: number; freeze(): void; close(): void }> {
  const pairs: Array<[Socket, Socket]> = [];
  const server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    const drop = () => (client.destroy(), upstream.destroy());
    client.on('error', drop);
    upstream.on('error', drop);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    freeze() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    close() {
      server.close();
      for (const [client, upstream] of pairs) (client.destroy(), upstream.destroy());
    },
  };
}

describe('the primary gone without a word (its machine lost: no close, no reset)', () => {
  it('answers the batch under way 503 once DATABASE_WRITE_TIMEOUT_MS has passed, and serves the next on a new connection', async () => {
    const db = new URL(freshPostgresDatabase()).pathname.slice(1);
    psql(db, 'CREATE TABLE probe (n int)');
    const relay = await freezableRelay(inject('postgresPort'));
    const ledger = await openLedger(
      loadConfig({
        DATABASE_URL: `postgres://postgres@127.0.0.1:${relay.port}/${db}`,
        DATABASE_WRITE_TIMEOUT_MS: '5000',
        LOG_LEVEL: 'silent',
      }),
    );
    const insert = (n: number) => ledger.write((tx) => tx.execute({ sql: 'INSERT INTO probe VALUES (?)', args: [n] }));
    try {
      await insert(1);
      relay.freeze();
      // Unbounded, this write would wait for as long as the connection stays open: here for ever, after a machine is lost
      // until TCP gives up on it (some fifteen minutes on Linux's defaults).
      expect(
        toProblem(
          await insert(2).then(
            () => undefined,
            (e: unknown) => e,
          ),
        ).status,
      ).toBe(503);
      await insert(3);
      expect(psql(db, "SELECT string_agg(n::text, ',' ORDER BY n) FROM probe")).toBe('1,3');
    } finally {
      relay.close();
      await ledger.close();
    }
  }, 120_000);
});

describe('no host accepting writes under a running server (the primary lost, no standby promoted yet)', () => {
  let cluster: Cluster;
  let s: TestServer;
  let clock: ReturnType<typeof holdCacheClock>;
  let key: string;
  let fuseId: string;
  const settings = { fsync: 'off', synchronous_commit: 'off' };
  const bin = postgresBin()!;
  const data = () => join(cluster.dir, 'data');

  beforeAll(async () => {
    cluster = await startCluster({ settings });
    cluster.psql('CREATE DATABASE fusegate');
    // The second host refuses connections: with the first down too, postgres.js tries them in turn without end.
    const refused = await freePort();
    s = await startTestServer({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${cluster.port},127.0.0.1:${refused}/fusegate?target_session_attrs=read-write`,
      DATABASE_CONNECT_WAIT_MS: '3000',
    });
    clock = holdCacheClock(s);
    key = (await s.newKey('no-writer')).secret;
    fuseId = (await (await s.fetch('/v1/fuses', { json: {}, key })).json()).fuse_id;
  });
  afterAll(async () => {
    await s?.stop();
    if (cluster) removeCluster(cluster);
  });

  const health = async () => {
    clock.passBound(2000);
    return s.fetch('/health');
  };
  const hop = () => s.fetch('/v1/fuse/hop', { json: { fuse_id: fuseId }, key });
  const receiptsLogSize = () => Number(cluster.psql("SELECT size FROM logs WHERE name = 'receipts'", 'fusegate').trim());
  let recorded: number;

  it('answers governed acts, reads and /health 503 ledger_unavailable with Retry-After', async () => {
    expect((await hop()).status).toBe(200);
    cluster.stop('fast');
    for (let i = 0; i < 3; i++) await expectUnavailable(await hop());
    await expectUnavailable(await s.fetch('/v1/fuses', { key }));
    const h = await health();
    expect(h.status).toBe(503);
    expect((await h.json()).database).not.toBe('ok');
  }, 120_000);

  it('still refuses acts, recording nothing, while the host that is back is a standby', async () => {
    runPg('/bin/sh', ['-c', `touch ${data()}/standby.signal`]);
    await startCluster({ dataDir: data(), port: cluster.port, settings });
    expect(cluster.psql('SELECT pg_is_in_recovery()').trim()).toBe('t');
    recorded = receiptsLogSize();
    for (let i = 0; i < 3; i++) await expectUnavailable(await hop());
    expect(receiptsLogSize()).toBe(recorded);
  }, 120_000);

  it('serves again once the standby is promoted, without a restart', async () => {
    runPg(join(bin, 'pg_ctl'), ['-D', data(), '-w', '-t', '60', 'promote']);
    const promoted = performance.now();
    const r = await until(hop, (x) => x.status !== 503);
    console.log(`${Math.round(performance.now() - promoted)} ms from the promotion to the first answer (printed, not asserted)`);
    expect(r.status).toBe(200);
    expect((await r.json()).decision).toBe('PERMIT');
    expect(receiptsLogSize()).toBeGreaterThan(recorded);
    await until(health, (x) => x.status === 200);
  }, 120_000);
});

describe('a standby named before the primary', () => {
  let primary: Cluster;
  let standby: Cluster;
  let s: TestServer;
  const settings = { fsync: 'off', synchronous_commit: 'off' };

  beforeAll(async () => {
    primary = await startCluster({ settings });
    primary.psql('CREATE DATABASE fusegate');
    // A copy of the primary started in recovery: a hot standby that stays one (it has no primary to follow).
    primary.stop('fast');
    const copy = join(postgresDir('fusegate-pg-'), 'data');
    runPg('/bin/sh', ['-c', `cp -a ${join(primary.dir, 'data')} ${copy} && touch ${copy}/standby.signal`]);
    standby = await startCluster({ dataDir: copy, settings });
    await startCluster({ dataDir: join(primary.dir, 'data'), port: primary.port, settings });
    expect(standby.psql('SELECT pg_is_in_recovery()').trim()).toBe('t');
    s = await startTestServer({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${standby.port},127.0.0.1:${primary.port}/fusegate?target_session_attrs=read-write`,
    });
  });
  afterAll(async () => {
    await s?.stop();
    if (standby) removeCluster(standby);
    if (primary) removeCluster(primary);
  });

  it('is passed over: the node migrates, writes and reads on the primary', async () => {
    const key = (await s.newKey('standby-first')).secret;
    const fuse = await s.fetch('/v1/fuses', { json: {}, key });
    expect(fuse.status).toBe(201);
    const fuseId = (await fuse.json()).fuse_id;
    const hop = await s.fetch('/v1/fuse/hop', { json: { fuse_id: fuseId }, key });
    expect(hop.status).toBe(200);
    expect((await hop.json()).decision).toBe('PERMIT');
    expect(primary.psql(`SELECT state FROM fuses WHERE id = '${fuseId}'`, 'fusegate').trim()).toBe('LIVE');
    const listed = await s.fetch('/v1/fuses', { key });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(await listed.json())).toContain(fuseId);
  }, 120_000);
});

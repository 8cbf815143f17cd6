/**
 * A failover of the engine, survived (issue 44 item 3, docs/postgresql.md
 * "Failover"): a primary and a synchronous streaming standby (initdb and
 * pg_basebackup in temporary folders), an API server on the several-hosts URL
 * with target_session_attrs=read-write, mixed writes, kill -9 of the primary,
 * pg_ctl promote of the standby. The server is never restarted; it serves again
 * by itself; every acknowledged write is on the new primary; the receipts log
 * is gapless and the checkpoint signed before the failover is a prefix of the
 * log after it; a request the failover caught got 503 with Retry-After.
 * Nothing here waits for a time: each step polls the state it needs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allReceipts } from './support/ledger-reads.ts';
import { readReceiptsLog, receiptsCheckpoint } from './support/nodes.ts';
import { postgresBin, postgresDir, removeCluster, runPg, startCluster, type Cluster } from './support/postgres-cluster.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { treeRoot } from './support/tile-client.ts';

const bin = postgresBin()!;
let primary: Cluster;
let standby: Cluster;
let s: TestServer;
let key: string;
let fuseId: string;

/** Polls `check` a moment apart until it holds (the test's timeout bounds it). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 50));
}

beforeAll(async () => {
  primary = await startCluster({ settings: { wal_level: 'replica', max_wal_senders: 4, synchronous_commit: 'on' } });
  primary.psql('CREATE DATABASE fusegate');
  const dir = postgresDir('fusegate-standby-');
  runPg(join(bin, 'pg_basebackup'), [
    '-h',
    '127.0.0.1',
    '-p',
    String(primary.port),
    '-U',
    'postgres',
    '-D',
    join(dir, 'data'),
    '-R',
    '-X',
    'stream',
    '-c',
    'fast',
  ]);
  standby = await startCluster({ dataDir: join(dir, 'data'), settings: { hot_standby: 'on' } });
  // From now on every commit waits for the standby's flush: an acknowledged write is on both machines.
  primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'");
  primary.psql('SELECT pg_reload_conf()');
  await until(() => primary.psql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").trim() === '1');
  s = await startTestServer({
    DATABASE_URL: `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/fusegate?target_session_attrs=read-write`,
  });
  key = (await s.newKey('failover', 1_000_000)).secret;
  fuseId = (await (await s.fetch('/v1/fuses', { json: {}, key })).json()).fuse_id;
}, 180_000);

afterAll(async () => {
  await s?.stop();
  if (standby) removeCluster(standby);
  if (primary) removeCluster(primary);
});

interface Answer {
  status: number;
  receiptId?: string;
  retryAfter: string | null;
  code?: string;
  decision?: string;
  /** When it was answered (performance.now()). */
  at: number;
}

describe('kill -9 of the primary under mixed writes, then promote the standby', () => {
  it('serves again by itself, loses no acknowledged write, and keeps the log gapless and consistent', async () => {
    const answers: Answer[] = [];
    let stop = false;
    let n = 0;
    const one = async (): Promise<Answer> => {
      const i = n++;
      const r =
        i % 3 === 0
          ? await s.fetch('/v1/fuses', { json: {}, key })
          : await s.fetch('/v1/fuse/hop', {
              json: { fuse_id: fuseId },
              key,
              headers: i % 3 === 2 ? { 'idempotency-key': `failover-${i}` } : {},
            });
      const body = await r.json().catch(() => ({}));
      return {
        at: performance.now(),
        status: r.status,
        receiptId: body.receipt_id,
        retryAfter: r.headers.get('retry-after'),
        code: body.code,
        decision: body.decision,
      };
    };
    const workers = Array.from({ length: 4 }, async () => {
      while (!stop) answers.push(await one());
    });
    const acknowledged = () => answers.filter((a) => a.status >= 200 && a.status < 300).length;

    await until(() => acknowledged() >= 20);
    const before = await receiptsCheckpoint(s);
    const pid = Number(readFileSync(join(primary.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    runPg(join(bin, 'pg_ctl'), ['-D', join(standby.dir, 'data'), '-w', '-t', '60', 'promote']);
    const atPromotion = answers.length;
    const promoted = performance.now();
    // Service comes back without a restart: answers acknowledged after the promotion.
    await until(() => answers.slice(atPromotion).filter((a) => a.status >= 200 && a.status < 300).length >= 20);
    stop = true;
    await Promise.all(workers);
    const firstPermit = answers.find((a) => a.at > promoted && a.decision === 'PERMIT');
    if (firstPermit)
      console.log(`${Math.round(firstPermit.at - promoted)} ms from the promotion to the first PERMIT answered (printed, not asserted)`);

    // A request the failover caught was refused, closed, with a time to retry; nothing else but success.
    const refused = answers.filter((a) => a.status >= 300);
    for (const a of refused) {
      expect(a.status).toBe(503);
      expect(a.code).toBe('ledger_unavailable');
      expect(a.retryAfter).toMatch(/^\d+$/);
    }
    // Every acknowledged write is on the new primary, with its receipt; every PERMIT has its receipt.
    const receipts = await allReceipts(s.ctx.ledger.read);
    const ids = new Set(receipts.map((r) => r.receipt_id));
    const ok = answers.filter((a) => a.status >= 200 && a.status < 300);
    expect(ok.length).toBeGreaterThanOrEqual(40);
    for (const a of ok) expect(ids.has(a.receiptId!), `${a.receiptId} (${a.decision ?? 'fuse'})`).toBe(true);
    expect(receipts.map((r) => r.log_index)).toEqual(receipts.map((_, i) => i));
    // Read as a stranger reads it after the failover: every tile checks out, and the checkpoint signed before it is a prefix.
    const log = await readReceiptsLog(s);
    expect(log.size).toBe(receipts.length);
    expect(log.size).toBeGreaterThan(before.size);
    expect(treeRoot(log.entries.slice(0, before.size))).toBe(before.root);
  }, 300_000);
});

/**
 * Several API nodes on one PostgreSQL database (issue 44 item 2,
 * docs/postgresql.md "Several nodes"): two real servers share one database and
 * one signing key. Whichever node appends, the receipts log stays gapless and
 * every earlier checkpoint consistent with the later ones; a fuse blown through
 * one node is DEAD on the other at once; a key revoked through one cannot act on
 * the other; an Idempotency-Key taken by one node's request is not taken again
 * by another's. (Bind-ticket redeems across processes: test/pas-concurrency.test.ts,
 * which runs on PostgreSQL too; job leases: test/leases.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openLedger } from '../src/ledger/db.ts';
import { revokeApiKey } from '../src/ledger/api-keys.ts';
import { reserveIdempotencyKey } from '../src/ledger/idempotency.ts';
import { allReceipts } from './support/ledger-reads.ts';
import { readReceiptsLog, receiptsCheckpoint, startNodes } from './support/nodes.ts';
import { freshPostgresDatabase, holdCacheClock, type TestServer } from './support/server.ts';
import { treeRoot } from './support/tile-client.ts';

let a: TestServer;
let b: TestServer;
let key: { id: string; secret: string };
let fuseId: string;

const hop = (node: TestServer, secret = key.secret) => node.fetch('/v1/fuse/hop', { json: { fuse_id: fuseId }, key: secret });

beforeAll(async () => {
  [a, b] = (await startNodes(freshPostgresDatabase(), 2)) as [TestServer, TestServer];
  key = await a.newKey('nodes', 1_000_000);
  const r = await a.fetch('/v1/fuses', { json: {}, key: key.secret });
  expect(r.status).toBe(201);
  fuseId = (await r.json()).fuse_id;
});
afterAll(async () => {
  await a?.stop();
  await b?.stop();
});

describe('two nodes appending to one log', () => {
  it('take gapless indexes, serve one log, and every earlier checkpoint is consistent with the later one', async () => {
    const before = await receiptsCheckpoint(a);
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => hop(i % 2 ? a : b)));
    const bodies = await Promise.all(answers.map((r) => r.json()));
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    expect(bodies.every((x) => x.decision === 'PERMIT')).toBe(true);
    const middle = await receiptsCheckpoint(b);
    await Promise.all(Array.from({ length: 20 }, (_, i) => hop(i % 2 ? b : a)));

    // Read as a stranger reads it, through either node's tiles: every index filled, the same entries, the checkpoint's root.
    const viaA = await readReceiptsLog(a);
    const viaB = await readReceiptsLog(b);
    expect(viaB.size).toBe(viaA.size);
    expect(viaB.entries).toEqual(viaA.entries);
    expect(viaA.size).toBe(before.size + 80);
    // The earlier checkpoints, whichever node signed them, are prefixes of the later log.
    expect(treeRoot(viaA.entries.slice(0, before.size))).toBe(before.root);
    expect(treeRoot(viaA.entries.slice(0, middle.size))).toBe(middle.root);

    const receipts = await allReceipts(b.ctx.ledger.read);
    expect(receipts.map((r) => r.log_index)).toEqual(receipts.map((_, i) => i));
    const ids = new Set(receipts.map((r) => r.receipt_id));
    for (const x of bodies) expect(ids.has(x.receipt_id)).toBe(true);
    expect(new Set(bodies.map((x) => x.receipt_id)).size).toBe(60);
  });
});

describe('state changed through one node', () => {
  it('a fuse blown through A is DEAD for a hop on B at once, whatever B holds in its caches', async () => {
    const own = (await (await a.fetch('/v1/fuses', { json: {}, key: key.secret })).json()).fuse_id;
    // B's caches never run out during this test: only the database can tell B.
    const clock = holdCacheClock(b);
    try {
      expect((await (await b.fetch('/v1/fuse/hop', { json: { fuse_id: own }, key: key.secret })).json()).decision).toBe('PERMIT');
      const blown = await a.fetch(`/v1/fuses/${own}/dead`, { method: 'POST', key: key.secret });
      expect(blown.status).toBe(200);
      const after = await b.fetch('/v1/fuse/hop', { json: { fuse_id: own }, key: key.secret });
      expect(after.status).toBe(200);
      expect(await after.json()).toMatchObject({ decision: 'DENY', state: 'DEAD', verdict: false });
    } finally {
      clock.release();
    }
  });

  it('a key revoked through A cannot act on B at once, even while B still holds it authenticated', async () => {
    const other = await a.newKey('revoked on a', 1000);
    const own = (await (await a.fetch('/v1/fuses', { json: {}, key: other.secret })).json()).fuse_id;
    const clock = holdCacheClock(b);
    try {
      expect((await b.fetch('/v1/fuse/hop', { json: { fuse_id: own }, key: other.secret })).status).toBe(200);
      expect(await revokeApiKey(a.ctx.ledger, other.id)).toBe(true);
      // B's authentication cache still holds the key (reads may answer within AUTH_CACHE_MS), but an act checks the row in its transaction.
      const refused = await b.fetch('/v1/fuse/hop', { json: { fuse_id: own }, key: other.secret });
      expect(refused.status).toBe(401);
      expect((await refused.json()).code).toBe('revoked_key');
      clock.passBound();
      expect((await b.fetch('/v1/me', { key: other.secret })).status).toBe(401);
    } finally {
      clock.release();
    }
  });
});

describe('an Idempotency-Key across nodes', () => {
  it('is reserved by one node only when two reserve it at once', async () => {
    const url = a.config.DATABASE_URL;
    const [one, two] = await Promise.all([
      openLedger(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' })),
      openLedger(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' })),
    ]);
    try {
      const r = { keyId: key.id, idemKey: 'same-key-two-nodes', hash: 'h', now: new Date(), leaseMs: 60_000 };
      let commitOne!: () => void;
      let reservedByOne!: () => void;
      const held = new Promise<void>((resolve) => (commitOne = resolve));
      const reserved = new Promise<void>((resolve) => (reservedByOne = resolve));
      // The first node's reservation stays uncommitted until the second one waits on its row.
      const first = one.write(async (tx) => {
        const prior = await reserveIdempotencyKey(tx, r);
        reservedByOne();
        await held;
        return prior;
      });
      await reserved;
      const secondAnswer = two.write((tx) => reserveIdempotencyKey(tx, r));
      const second = (async () => {
        while (
          !(await one.read.execute("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows
            .length
        )
          await new Promise((res) => setTimeout(res, 10));
      })();
      await second;
      commitOne();
      expect(await first).toBeUndefined();
      expect(await secondAnswer).toMatchObject({ state: 'running', request_hash: 'h' });
    } finally {
      await one.close();
      await two.close();
    }
  });
});

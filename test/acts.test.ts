/**
 * The act pipeline's group commit (ledger/acts.ts) on a real database file:
 * a batch of acts costs the statements of one act, decisions are made on the
 * state read under the write lock, and one bad act fails alone.
 */
import { ORN_EVENTS } from '../src/ledger/orn.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { InStatement } from '@libsql/client';
import { loadConfig } from '../src/config.ts';
import { commitActs, HopLimitReached, KeyRevoked, type ActPlan, type Appended, type GroupReader } from '../src/ledger/acts.ts';
import { createApiKey, getApiKey } from '../src/ledger/api-keys.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { createFuse, transitionFuse } from '../src/ledger/fuses.ts';
import { logSize, readEntries, treeHead, type Inclusion } from '../src/ledger/log.ts';
import { leafHash, verifyInclusion } from '../src/crypto/merkle.ts';
import { usage } from '../src/ledger/meter.ts';
import { jobReceipts, PAS_JOB_RECEIPTS } from '../src/ledger/pas.ts';
import { scanKeyReceipts } from '../src/ledger/key-receipts.ts';
import { monthHops } from '../src/ledger/operator.ts';
import { getReceipt, RECEIPTS_LOG, receiptIndex, receiptsFromEntries, type Receipt } from '../src/ledger/receipts.ts';
import { type ActRecord, record } from '../src/ledger/records.ts';
import type { Sql } from '../src/ledger/sql.ts';
import { PostgresSql } from '../src/ledger/drivers/postgres/connection.ts';
import { tempDir, testEnv } from './support/server.ts';
import { commitAct } from '../src/api/act.ts';
import { StateChanged } from '../src/api/stale-retry.ts';
import { reserveIdempotencyKey } from '../src/ledger/idempotency.ts';
import type { AppContext } from '../src/api/context.ts';
import type { H3Event } from 'h3';
import { join } from 'node:path';
import { loadKeyring } from '../src/crypto/keys.ts';
import { sealReceipts } from '../src/ledger/seals.ts';

const issuer = { config: { BASE_URL: 'http://gate.test' }, keyring: undefined as never };

let ledger: Ledger;
let keyId: string;
const FUSE = 'fuse_acts_test';

beforeEach(async () => {
  ledger = await openLedger(loadConfig(testEnv(tempDir())));
  keyId = (await createApiKey(ledger, { name: 'acts', hopLimit: 1000 })).key.id;
  await ledger.write((tx) => createFuse(tx, { id: FUSE, keyId, state: 'LIVE', label: null, now: new Date().toISOString() }));
});
afterEach(() => ledger.close());

/** A hop as the gate makes it: decided on the fuse read under the lock, one hop counted, one charge, one receipt. */
/** Each act's record, if any: a clear act (even n) or an ORN event (odd n), as the execute gate and ORN declare them. */
type RecordKind = 'none' | 'mixed';

function hop(n: number, records: RecordKind = 'none'): ActPlan<{ state: string; receipt: Receipt }> {
  return {
    needs: { fuseId: FUSE, hopOf: keyId },
    decide(state) {
      if (!state.fuse) throw new Error('no fuse');
      const receipt = state.receipt(
        issuer,
        { kind: 'hop', decision: state.fuse.state === 'LIVE' ? 'PERMIT' : 'BLOCK', subject: FUSE, key_id: keyId, data: { n } },
        { charges: [{ keyId, sku: 'execute_gate', amountMicros: 1000 }] },
      );
      const at = new Date().toISOString();
      const declared: ActRecord | undefined =
        records === 'none'
          ? undefined
          : n % 2 === 0
            ? record(PAS_JOB_RECEIPTS, { keyId, jobId: `job_${n}`, receiptId: receipt.receipt_id })
            : record(ORN_EVENTS, {
                id: `sharp_${receipt.receipt_id}`,
                keyId,
                kind: 'sharp',
                graphId: 'g',
                amountMicros: BigInt(n),
                receiptId: receipt.receipt_id,
                createdAt: at,
              });
      return { writes: { receipt, records: declared ? [declared] : [] }, result: { state: state.fuse.state, receipt } };
    },
  };
}

/** The transaction, counting the statements sent through it and keeping their SQL. */
function counting(tx: Sql): { tx: Sql; count: () => number; sent: string[] } {
  const sent: string[] = [];
  const text = (s: InStatement) => (typeof s === 'string' ? s : s.sql);
  return {
    tx: {
      dialect: tx.dialect,
      execute: (s: InStatement) => (sent.push(text(s)), tx.execute(s)),
      close: () => tx.close(),
    },
    count: () => sent.length,
    sent,
  };
}

const scalar = async (sql: string, args: Array<string | number> = []) => Number((await ledger.read.execute({ sql, args })).rows[0]!.n);

describe('group commit of acts', () => {
  it('commits a batch of 64 acts with the same statements as one act, and writes every row of each', async () => {
    const statementsFor = (acts: number) =>
      ledger.write(async (tx) => {
        const c = counting(tx);
        const outcomes = await commitActs(
          c.tx,
          Array.from({ length: acts }, (_, i) => hop(i)),
        );
        expect(outcomes.every((o) => o.ok)).toBe(true);
        return c.count();
      });
    await statementsFor(1); // the receipts log now has a stored right edge, as in service
    const one = await statementsFor(1);
    const many = await statementsFor(64);
    expect(many).toBe(one);

    expect(await logSize(ledger.read, RECEIPTS_LOG)).toBe(66);
    const u = await usage(ledger.read, keyId);
    expect(u.by_sku.map((x) => [x.sku, x.count])).toEqual([['execute_gate', 66]]);
    expect(u.total_micros).toBe(66_000n);
    // Log indexes are gapless and each receipt's id names its own entry.
    const entries = receiptsFromEntries(await readEntries(ledger.read, RECEIPTS_LOG, 0, 100));
    expect(entries.map((r) => receiptIndex(r.receipt_id))).toEqual(Array.from({ length: 66 }, (_, i) => i));
    expect(entries.every((r) => r.payload.charges?.[0]?.amount_micros === 1000)).toBe(true);
    expect((await getApiKey(ledger.read, keyId))!.hops_used).toBe(66);
    expect(await monthHops(ledger.read, keyId, new Date().toISOString().slice(0, 7))).toBe(66);
  });

  it("writes the records acts declare with the group's rows: 64 acts cost the statements of two, one per table", async () => {
    const statementsFor = (acts: number) =>
      ledger.write(async (tx) => {
        const c = counting(tx);
        const outcomes = await commitActs(
          c.tx,
          Array.from({ length: acts }, (_, i) => hop(i, 'mixed')),
        );
        expect(outcomes.every((o) => o.ok)).toBe(true);
        return c.count();
      });
    await statementsFor(2);
    const two = await statementsFor(2);
    expect(await statementsFor(64)).toBe(two);
    expect(await scalar('SELECT COUNT(*) AS n FROM orn_events')).toBe(34);
    // Each ORN row names its own act's receipt.
    const ids = (await ledger.read.execute('SELECT receipt_id FROM orn_events')).rows.map((x) => String(x.receipt_id));
    const found = await Promise.all(ids.map((id) => getReceipt(ledger.read, id)));
    expect(found.filter(Boolean)).toHaveLength(34);
    // Acts 0, 2, … 62 of the last group (act 0 also in the first two): each job lists its own acts' receipts.
    expect(await scalar('SELECT COUNT(DISTINCT job_id) AS n FROM pas_job_receipt_lists')).toBe(32);
    const listed = await Promise.all(Array.from({ length: 32 }, (_, i) => jobReceipts(ledger.read, keyId, `job_${2 * i}`)));
    expect(listed.map((l) => l.length)).toEqual([3, ...Array.from({ length: 31 }, () => 1)]);
    for (const [i, list] of listed.entries()) {
      for (const r of list) expect((await getReceipt(ledger.read, r.receipt_id))!.payload.data).toEqual({ n: 2 * i });
    }
  });

  // On a server each statement a batch waits for before sending the next is a round trip (PostgreSQL):
  // the batch sends the statements that need no answer of each other together (ledger/sql.ts allSent).
  it('waits for three answers per sealed batch of hops, whatever its size, with no savepoint', async () => {
    const keyring = await loadKeyring({ SIGNING_KEY_FILE: join(tempDir(), 'keys.json') });
    const batches: Array<{ waits: number; sent: string[] }> = [];
    let batch = { waits: 0, sent: [] as string[] };
    let answering = 0;
    // The embedded driver's reads and writes are one class; PostgreSQL's read connection is a wrapper
    // (bounded waits, renewed pools) over the class its transactions run statements on.
    const readProto = Object.getPrototypeOf(ledger.read) as Sql;
    const proto = readProto === Object.prototype ? (PostgresSql.prototype as unknown as Sql) : readProto;
    const execute = proto.execute;
    proto.execute = function (this: Sql, stmt: InStatement) {
      if (this === ledger.read) return execute.call(this, stmt);
      batch.sent.push(typeof stmt === 'string' ? stmt : stmt.sql);
      // Sent while no statement is being answered: the batch waited for every answer before it.
      if (answering++ === 0) batch.waits++;
      return execute.call(this, stmt).finally(() => answering--);
    };
    ledger.onBatchEnd(async (tx, end) => {
      await sealReceipts(tx, 'gate.test/receipts', keyring.current, end.receiptsHead);
      batches.push(batch);
      batch = { waits: 0, sent: [] };
    });
    try {
      for (const size of [1, 1, 40]) await Promise.all(Array.from({ length: size }, (_, i) => ledger.act(hop(i))));
    } finally {
      proto.execute = execute;
      ledger.onBatchEnd(undefined);
    }
    // The reads under the receipts head's lock, the writes, the seal (BEGIN and COMMIT are the engine's).
    expect(batches.map((b) => b.waits)).toEqual([3, 3, 3]);
    expect(batches.flatMap((b) => b.sent).filter((sql) => /SAVEPOINT|RELEASE/.test(sql))).toEqual([]);
    // The seal signs the head the batch wrote: the log's head is read once per batch.
    for (const b of batches) expect(b.sent.filter((sql) => sql.startsWith('SELECT size, edge FROM logs'))).toHaveLength(1);
    expect(Number((await ledger.read.execute('SELECT MAX(tree_size) AS n FROM receipt_seals')).rows[0]!.n)).toBe(42);
  });

  it('runs a batch of acts again with savepoints when its writes break a constraint: the bad act fails alone', async () => {
    const twin = (n: number): ActPlan<number> => ({
      needs: { fuseId: FUSE, hopOf: keyId },
      decide(state) {
        const receipt = state.receipt(issuer, { kind: 'hop', decision: 'PERMIT', subject: FUSE, key_id: keyId, data: { n } });
        const at = new Date().toISOString();
        // Both acts write the same ORN event id: the group's insert breaks its primary key.
        return {
          writes: {
            receipt,
            records: [
              record(ORN_EVENTS, {
                id: 'sharp_twin',
                keyId,
                kind: 'sharp',
                graphId: 'g',
                amountMicros: 1n,
                receiptId: receipt.receipt_id,
                createdAt: at,
              }),
            ],
          },
          result: n,
        };
      },
    });
    const [a, b, c] = await Promise.allSettled([ledger.act(hop(1)), ledger.act(twin(2)), ledger.act(twin(3))]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('fulfilled');
    expect(c.status).toBe('rejected');
    // Two receipts, gapless, and one ORN event: the failed act left nothing.
    const entries = receiptsFromEntries(await readEntries(ledger.read, RECEIPTS_LOG, 0, 10));
    expect(entries.map((r) => [receiptIndex(r.receipt_id), r.payload.data])).toEqual([
      [0, { n: 1 }],
      [1, { n: 2 }],
    ]);
    expect(await scalar('SELECT COUNT(*) AS n FROM orn_events')).toBe(1);
    expect((await getApiKey(ledger.read, keyId))!.hops_used).toBe(2);
  });

  it('counts the hop quota exactly within one batch: the acts past the limit are refused and write nothing', async () => {
    const limited = (await createApiKey(ledger, { name: 'limited', hopLimit: 5 })).key.id;
    const plan = (n: number): ActPlan<number> => ({
      needs: { hopOf: limited },
      decide: (state) => ({
        writes: { receipt: state.receipt(issuer, { kind: 'lookup', decision: 'LIVE', key_id: limited, data: { n } }) },
        result: n,
      }),
    });
    const settled = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => ledger.act(plan(i))));
    expect(settled.filter((s) => s.status === 'fulfilled').map((s) => (s as PromiseFulfilledResult<number>).value)).toEqual([
      0, 1, 2, 3, 4,
    ]);
    for (const s of settled.slice(5)) expect((s as PromiseRejectedResult).reason).toBeInstanceOf(HopLimitReached);
    expect((await getApiKey(ledger.read, limited))!.hops_used).toBe(5);
    expect((await scanKeyReceipts(ledger.read, [limited], { limit: 100 })).receipts).toHaveLength(5);
  });

  it('lets an act refuse alone: its neighbours commit, it spends no hop and leaves no receipt', async () => {
    const refusing: ActPlan<never> = {
      needs: { fuseId: FUSE, hopOf: keyId },
      decide: () => {
        throw new Error('refused by its rule');
      },
    };
    const [a, b, c] = await Promise.allSettled([ledger.act(hop(1)), ledger.act(refusing), ledger.act(hop(2))]);
    expect(a.status).toBe('fulfilled');
    expect((b as PromiseRejectedResult).reason.message).toBe('refused by its rule');
    expect(c.status).toBe('fulfilled');
    expect((await getApiKey(ledger.read, keyId))!.hops_used).toBe(2);
    expect(await logSize(ledger.read, RECEIPTS_LOG)).toBe(2);
  });

  it('hands a transition to the acts after it in the group: a hop queued behind a blow decides on DEAD', async () => {
    const blow: ActPlan<string> = {
      needs: { fuseId: FUSE },
      run: async (tx, state) => {
        const now = new Date().toISOString();
        expect(await transitionFuse(tx, FUSE, ['LIVE'], 'DEAD', now)).toBe(true);
        const receipt = state.receipt(issuer, { kind: 'fuse_dead', decision: 'DEAD', subject: FUSE, key_id: keyId });
        return { writes: { receipt, fuse: { ...state.fuse!, state: 'DEAD', updated_at: now } }, result: 'DEAD' };
      },
    };
    const [before, , after] = await Promise.all([ledger.act(hop(1)), ledger.act(blow), ledger.act(hop(2))]);
    expect(before.state).toBe('LIVE');
    expect(after.state).toBe('DEAD');
    expect(after.receipt.payload.decision).toBe('BLOCK');
  });

  it('reads the rows its run acts declare once for the group, and again for each act after one of them changed a row', async () => {
    const reads: string[][] = [];
    const FUSE_STATES: GroupReader<string> = {
      async read(tx, keys) {
        reads.push([...keys]);
        const where = tx.dialect.oneOf('id', keys);
        const rs = await tx.execute({ sql: `SELECT id, state FROM fuses WHERE ${where.sql}`, args: where.args });
        return new Map(rs.rows.map((r) => [String(r.id), String(r.state)]));
      },
    };
    const look = (id: string, declared = true): ActPlan<string | undefined> => ({
      needs: declared ? { rows: [{ reader: FUSE_STATES, key: id }] } : {},
      run: async (_tx, state) => ({ writes: {}, result: await state.row(FUSE_STATES, id) }),
    });
    const at = new Date().toISOString();
    // A statement that changes no row leaves the group's read true; one that does makes the acts after it read again.
    const noChange: ActPlan<boolean> = {
      needs: {},
      run: async (tx) => ({ writes: {}, result: await transitionFuse(tx, FUSE, ['DEAD'], 'LIVE', at) }),
    };
    const blow: ActPlan<boolean> = {
      needs: {},
      run: async (tx) => ({ writes: {}, result: await transitionFuse(tx, FUSE, ['LIVE'], 'DEAD', at) }),
    };
    const results = await Promise.all([
      ledger.act(look(FUSE)),
      ledger.act(look('fuse_missing')),
      ledger.act(noChange),
      ledger.act(look(FUSE)),
      ledger.act(blow),
      ledger.act(look(FUSE)),
      ledger.act(look('fuse_missing')),
    ]);
    expect(results).toEqual(['LIVE', undefined, false, 'LIVE', true, 'DEAD', undefined]);
    expect(reads).toEqual([[FUSE, 'fuse_missing'], [FUSE], ['fuse_missing']]);
    // A key no act of the group declared is read on its own.
    reads.length = 0;
    expect(await Promise.all([ledger.act(look('fuse_missing')), ledger.act(look(FUSE, false))])).toEqual([undefined, 'DEAD']);
    expect(reads).toEqual([['fuse_missing'], [FUSE]]);
  });

  it('answers a row an act recorded (setRow) to the acts after it in the group, before any read, and undoes it with a failed act', async () => {
    const reads: string[][] = [];
    const COUNTS: GroupReader<number> = {
      async read(_tx, keys) {
        reads.push([...keys]);
        return new Map(keys.filter((k) => k === 'stored').map((k) => [k, 10]));
      },
    };
    // Each act reads its row, records it one higher, and optionally fails after recording.
    const bump = (key: string, fail = false): ActPlan<number> => ({
      needs: { rows: [{ reader: COUNTS, key }] },
      run: async (_tx, state) => {
        const next = ((await state.row(COUNTS, key)) ?? 0) + 1;
        state.setRow(COUNTS, key, next);
        if (fail) throw new Error('refused after recording');
        return { writes: {}, result: next };
      },
    });
    const outcomes = await Promise.allSettled([
      ledger.act(bump('stored')),
      ledger.act(bump('stored')),
      ledger.act(bump('new')),
      ledger.act(bump('stored', true)),
      ledger.act(bump('stored')),
      ledger.act(bump('new', true)),
      ledger.act(bump('new')),
    ]);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'refused'))).toEqual([11, 12, 1, 'refused', 13, 'refused', 2]);
    // One read for the group: every later answer came from the rows the acts before it recorded.
    expect(reads).toEqual([['stored', 'new']]);
  });

  it("opens a run act's savepoint at its first statement: a refusal that sent none costs none, one that wrote is undone", async () => {
    const at = new Date().toISOString();
    const refuseAtOnce: ActPlan<never> = { needs: {}, run: async () => Promise.reject(new Error('refused before any statement')) };
    const blowThenRefuse: ActPlan<never> = {
      needs: {},
      run: async (tx) => {
        expect(await transitionFuse(tx, FUSE, ['LIVE'], 'DEAD', at)).toBe(true);
        throw new Error('refused after writing');
      },
    };
    const look: ActPlan<string> = { needs: { fuseId: FUSE }, run: async (_tx, state) => ({ writes: {}, result: state.fuse!.state }) };
    let sent: string[] = [];
    const outcomes = await ledger.write(async (tx) => {
      const c = counting(tx);
      sent = c.sent;
      return commitActs(c.tx, [refuseAtOnce, blowThenRefuse, look]);
    });
    expect(outcomes.map((o) => o.ok)).toEqual([false, false, true]);
    expect(sent.filter((q) => /SAVEPOINT|RELEASE|ROLLBACK/.test(q))).toEqual(['SAVEPOINT act', 'ROLLBACK TO act', 'RELEASE act']);
    // The blow was undone with its act: the fuse is LIVE, in the act after it and in the database.
    expect((outcomes[2] as { value: string }).value).toBe('LIVE');
    expect(String((await ledger.read.execute({ sql: 'SELECT state FROM fuses WHERE id = ?', args: [FUSE] })).rows[0]!.state)).toBe('LIVE');
  });

  it('fails only the act that breaks a constraint, and keeps the log gapless', async () => {
    const at = new Date().toISOString();
    const carrying = (eventId: string): ActPlan<string> => ({
      needs: {},
      decide: (state) => {
        const receipt = state.receipt(issuer, { kind: 'test', decision: 'PERMIT', subject: FUSE });
        return {
          writes: {
            receipt,
            records: [
              record(ORN_EVENTS, {
                id: eventId,
                keyId,
                kind: 'sharp',
                graphId: 'g',
                amountMicros: 1n,
                receiptId: receipt.receipt_id,
                createdAt: at,
              }),
            ],
          },
          result: receipt.receipt_id,
        };
      },
    });
    // The second act reuses the first one's event id: the group's multi-row insert fails, then each act runs alone.
    const [a, b, c] = await Promise.allSettled([
      ledger.act(carrying('evt_1')),
      ledger.act(carrying('evt_1')),
      ledger.act(carrying('evt_2')),
    ]);
    expect(a.status).toBe('fulfilled');
    expect((b as PromiseRejectedResult).reason.message).toMatch(
      /UNIQUE constraint failed: orn_events\.id|duplicate key value violates unique constraint "orn_events_pkey"/,
    );
    expect(c.status).toBe('fulfilled');
    expect(await logSize(ledger.read, RECEIPTS_LOG)).toBe(2);
    const ids = [(a as PromiseFulfilledResult<string>).value, (c as PromiseFulfilledResult<string>).value];
    expect(ids.map(receiptIndex).sort()).toEqual([0, 1]);
    expect((await Promise.all(ids.map((id) => getReceipt(ledger.read, id)))).every(Boolean)).toBe(true);
  });

  it('discards the receipt of an act that throws after minting it: the next act takes its index', async () => {
    const throwing: ActPlan<never> = {
      needs: {},
      decide: (state) => {
        state.receipt(issuer, { kind: 'test', decision: 'PERMIT' });
        throw new Error('refused after minting');
      },
    };
    const [x, y] = await Promise.allSettled([ledger.act(throwing), ledger.act(hop(1))]);
    expect((x as PromiseRejectedResult).reason.message).toBe('refused after minting');
    expect(receiptIndex((y as PromiseFulfilledResult<{ receipt: Receipt }>).value.receipt.receipt_id)).toBe(0);
    expect(await logSize(ledger.read, RECEIPTS_LOG)).toBe(1);
  });

  it('refuses, under the lock, an act of a key revoked after it was authenticated', async () => {
    await ledger.write((tx) =>
      tx.execute({ sql: 'UPDATE api_keys SET revoked_at = ? WHERE id = ?', args: [new Date().toISOString(), keyId] }),
    );
    await expect(ledger.act(hop(1))).rejects.toBeInstanceOf(KeyRevoked);
    expect(await logSize(ledger.read, RECEIPTS_LOG)).toBe(0);
  });

  it('records the Idempotency-Key answer with the attempt that commits, not the one that was retried', async () => {
    await ledger.write((tx) => reserveIdempotencyKey(tx, { keyId, idemKey: 'k-1', hash: 'h', now: new Date(), leaseMs: 60_000 }));
    const event = { context: { idempotency: { keyId, idemKey: 'k-1' } } } as unknown as H3Event;
    const ctx = { ledger } as AppContext;
    // The first attempt finds its state changed under it (as a signed act may); the route tries again.
    await expect(commitAct(event, ctx, undefined, { run: async () => Promise.reject(new StateChanged()) })).rejects.toBeInstanceOf(
      StateChanged,
    );
    const reply = await commitAct(event, ctx, undefined, {
      decide: (state) => ({
        writes: { receipt: state.receipt(issuer, { kind: 'test', decision: 'PERMIT', key_id: keyId }) },
        reply: { status: 201, body: { ok: true } },
      }),
    });
    expect(reply.status).toBe(201);
    const row = (
      await ledger.read.execute({
        sql: 'SELECT state, status, body FROM idempotency WHERE key_id = ? AND idem_key = ?',
        args: [keyId, 'k-1'],
      })
    ).rows[0]!;
    expect([row.state, row.status, JSON.parse(String(row.body))]).toEqual(['done', 201, { ok: true }]);
    expect(event.context.idempotency).toBeUndefined();
  });

  it("appends a group's entries of another log together, each act knowing its index and leaf hash at once; a failed act leaves no gap", async () => {
    const leaves = Array.from({ length: 6 }, (_, i) => new TextEncoder().encode(`manifest ${i}`));
    const appendAct = (i: number): ActPlan<Appended> => ({
      needs: {},
      async run(_tx, state) {
        const a = await state.append('astl', leaves[i]!);
        if (i === 2) throw new Error('refused after appending');
        return { writes: {}, result: a };
      },
    });
    // Queued in one tick: one group.
    const outcomes = await Promise.allSettled(leaves.map((_, i) => ledger.act(appendAct(i))));
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    const done = outcomes.filter((o): o is PromiseFulfilledResult<Appended> => o.status === 'fulfilled').map((o) => o.value);
    expect(done.map((a) => a.index)).toEqual([0, 1, 2, 3, 4]);
    // The log holds the entries of the acts that committed, in order, each at the index its act was told.
    const stored = await readEntries(ledger.read, 'astl', 0, 10);
    expect(stored.map((e) => new TextDecoder().decode(e.leaf))).toEqual([
      'manifest 0',
      'manifest 1',
      'manifest 3',
      'manifest 4',
      'manifest 5',
    ]);
    for (const a of done) expect(Buffer.from(a.leafHash)).toEqual(Buffer.from(leafHash(stored[a.index]!.leaf)));
    // The group wrote the log once: one segment row for its five entries.
    const segments = Number((await ledger.read.execute("SELECT COUNT(*) AS n FROM log_segments WHERE log = 'astl'")).rows[0]!.n);
    expect(segments).toBe(1);
  });

  it('proves, at the end of the group, every entry its acts appended at the size the group leaves the log at, and only for acts that succeeded', async () => {
    const leaves = Array.from({ length: 7 }, (_, i) => new TextEncoder().encode(`entry ${i}`));
    let endedForRefused = false;
    const appendAct = (i: number): ActPlan<{ index: number; inclusion?: Inclusion }> => ({
      needs: {},
      async run(_tx, state) {
        const { index } = await state.append('astl', leaves[i]!);
        const answer: { index: number; inclusion?: Inclusion } = { index };
        state.atGroupEnd((group) => {
          if (i === 4) endedForRefused = true;
          answer.inclusion = group.inclusion('astl', index);
        });
        if (i === 4) throw new Error('refused after appending');
        return { writes: {}, result: answer };
      },
    });
    const outcomes = await Promise.allSettled(leaves.map((_, i) => ledger.act(appendAct(i))));
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(endedForRefused).toBe(false);
    const done = outcomes
      .filter((o): o is PromiseFulfilledResult<{ index: number; inclusion?: Inclusion }> => o.status === 'fulfilled')
      .map((o) => o.value);
    // One size for the whole group (six entries): one checkpoint would sign every answer.
    const head = await treeHead(ledger.read, 'astl', 6);
    const stored = await readEntries(ledger.read, 'astl', 0, 10);
    for (const { index, inclusion } of done) {
      expect(inclusion).toMatchObject({ index, size: 6 });
      expect(Buffer.from(inclusion!.root)).toEqual(Buffer.from(head.root));
      expect(Buffer.from(inclusion!.leafHash)).toEqual(Buffer.from(leafHash(stored[index]!.leaf)));
      verifyInclusion(index, 6, inclusion!.leafHash, inclusion!.hashes, head.root);
    }
  });
});

/**
 * Moving up (`fusegate database copy`): a real embedded file written through a
 * real server is copied by the CLI, a process of its own, into a fresh
 * PostgreSQL database; a server started on the copy serves the old receipts'
 * evidence and every log's tiles as a stranger's client checks them, takes the
 * old keys, and appends consistently with the checkpoints published before
 * the move (checked by the `verify` CLI). A non-empty target, or a source
 * whose tiles do not give its root, is refused and the target keeps nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../src/ledger/db.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { commitReceipts, verifiedReceiptPayload } from './support/receipts.ts';
import { freshPostgresDatabase, startTestServer, tempDir, type TestServer } from './support/server.ts';
import { readTiledLog } from './support/tile-client.ts';

const LOGS = ['receipts', 'astl', 'triggers', 'clearing'];

async function logInfo(
  s: TestServer,
  log: string,
): Promise<{ tree_size: number; verifier_key: string; origin: string; tiles_url: string }> {
  return (await s.fetch(`/api/v1/logs/${log}`)).json();
}

async function rowsOf(url: string, table: string): Promise<number> {
  const db = await connectDatabase(url);
  try {
    return Number((await db.execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
  } finally {
    await db.end();
  }
}

describe('database copy: an embedded file moved into PostgreSQL', () => {
  const dir = tempDir();
  const file = `file:${join(dir, 'fusegate.db')}`;
  /** Both servers publish under one public URL (as nodes do), so a log keeps its origin across the move. */
  const BASE_URL = 'http://gate.invalid';
  /** The CLI's environment: the embedded file as DATABASE_URL, the servers' key file. */
  const env = { DATABASE_URL: file, SIGNING_KEY_FILE: join(dir, 'signing-keys.json'), BASE_URL, LOG_LEVEL: 'silent' };
  let secret: string;
  let fuseId: string;
  const receiptIds: string[] = [];
  let oldCheckpoint: string;
  let oldSize: number;
  let target: string;
  let copied: Record<string, any>;
  let pg: TestServer;

  beforeAll(async () => {
    const s = await startTestServer({ DATABASE_URL: file, BASE_URL }, dir);
    secret = (await s.newKey('before the move')).secret;
    fuseId = (await (await s.fetch('/v1/fuses', { key: secret, json: {} })).json()).fuse_id;
    for (let i = 0; i < 6; i++) {
      const hop = await (
        await s.fetch('/v1/fuse/hop', { key: secret, json: { fuse_id: fuseId }, headers: { 'idempotency-key': `hop-${i}` } })
      ).json();
      receiptIds.push(hop.receipt_id);
    }
    // A row of a table whose key PostgreSQL numbers itself (pas_license_events.seq): the copy carries its number.
    expect((await s.fetch('/v1/pas/licenses/lic_before_move/charge', { key: secret, method: 'POST' })).status).toBe(200);
    // Past one level-0 tile, so that the copy carries stored hashes of tile level 1 too.
    await commitReceipts(
      s.ctx.ledger,
      s.ctx,
      Array.from({ length: 300 }, (_, i) => ({ kind: 'test', decision: 'PERMIT', subject: `s${i}` })),
    );
    const info = await logInfo(s, 'receipts');
    oldSize = info.tree_size;
    oldCheckpoint = await (await s.fetch(`${new URL(info.tiles_url).pathname}checkpoint`)).text();
    await s.close();

    target = freshPostgresDatabase();
    const run = await runCli(['database', 'copy', '--to', target, '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    copied = JSON.parse(run.stdout);
    pg = await startTestServer({ DATABASE_URL: target, BASE_URL }, dir);
  }, PROCESS_TEST_TIMEOUT_MS);
  afterAll(() => pg?.stop());

  it('copies every table and proves each log: same size and root, earlier heads consistent', async () => {
    const tables = Object.fromEntries((copied.tables as Array<{ table: string; rows: number }>).map((t) => [t.table, t.rows]));
    for (const table of ['accounts', 'api_keys', 'fuses', 'log_segments', 'log_tile_hashes', 'logs', 'idempotency', 'hop_counters']) {
      expect(tables[table], table).toBeGreaterThan(0);
      expect(await rowsOf(target, table), table).toBe(tables[table]);
      expect(await rowsOf(file, table), table).toBe(tables[table]);
    }
    const receipts = (copied.logs as Array<{ name: string; size: number; root: string; consistentSizes: number[] }>).find(
      (l) => l.name === 'receipts',
    )!;
    expect(receipts.size).toBe(oldSize);
    expect(oldCheckpoint.split('\n')[2]).toBe(receipts.root);
    expect(receipts.consistentSizes).toEqual(expect.arrayContaining([1, 256, oldSize - 1]));
  });

  it(
    'serves the old receipts with their evidence, and every log as tiles a stranger verifies',
    async () => {
      for (const id of receiptIds) expect((await verifiedReceiptPayload(pg, id)).decision).toBe('PERMIT');
      for (const log of LOGS) {
        const info = await logInfo(pg, log);
        const prefix = new URL(info.tiles_url).pathname;
        const read = await readTiledLog(
          async (p) => new Uint8Array(await (await pg.fetch(prefix + p)).arrayBuffer()),
          info.verifier_key,
          info.origin,
        );
        expect(read.size).toBe(info.tree_size);
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'takes the old key, idempotency records and numbered rows, and appends consistently with the checkpoint published before the move',
    async () => {
      const again = await (
        await pg.fetch('/v1/fuse/hop', { key: secret, json: { fuse_id: fuseId }, headers: { 'idempotency-key': 'hop-0' } })
      ).json();
      expect(again.receipt_id).toBe(receiptIds[0]);
      const next = await (await pg.fetch('/v1/fuse/hop', { key: secret, json: { fuse_id: fuseId } })).json();
      expect(next.decision).toBe('PERMIT');
      // The next row numbered by the target comes after the copied ones (its sequence was moved past them).
      expect((await pg.fetch('/v1/pas/licenses/lic_after_move/charge', { key: secret, method: 'POST' })).status).toBe(200);
      const info = await logInfo(pg, 'receipts');
      expect(info.tree_size).toBe(oldSize + 2);
      const old = join(dir, 'old-checkpoint.txt');
      writeFileSync(old, oldCheckpoint);
      const api = `${pg.url}/api/v1/logs/receipts`;
      const verify = await runCli(
        [
          'verify',
          'consistency',
          '--old',
          old,
          '--new',
          `${pg.url}${new URL(info.tiles_url).pathname}checkpoint`,
          '--log-key',
          info.verifier_key,
          '--proof',
          `${api}/proof/consistency?from=${oldSize}&to=${info.tree_size}`,
          '--json',
        ],
        env,
      );
      expect(verify.code, verify.stderr + verify.stdout).toBe(0);
      expect(JSON.parse(verify.stdout).verified).toBe(true);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses a target that is not empty, and leaves it as it was',
    async () => {
      const before = await rowsOf(target, 'log_segments');
      const run = await runCli(['database', 'copy', '--to', target], env);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/not empty: it holds rows in .*api_keys/);
      expect(await rowsOf(target, 'log_segments')).toBe(before);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'refuses a source whose stored tiles do not give its root, and the target keeps nothing',
    async () => {
      const src = await connectDatabase(file);
      try {
        // One stored hash of tile level 1 changed: the log's edge (its root) no longer matches what its tiles fold to.
        await src.execute("UPDATE log_tile_hashes SET hash = zeroblob(32) WHERE log = 'receipts' AND level = 1 AND idx = 0");
      } finally {
        await src.end();
      }
      const fresh = freshPostgresDatabase();
      const run = await runCli(['database', 'copy', '--to', fresh], env);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(
        `log receipts: the roots at size ${oldSize} differ (the source's tiles and the copied tiles against the copied edge)`,
      );
      for (const table of ['api_keys', 'log_segments', 'log_tile_hashes']) expect(await rowsOf(fresh, table), table).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('database copy: bad usage', () => {
  it(
    'asks for a PostgreSQL target and an embedded source, and exits 2 otherwise',
    async () => {
      const dir = tempDir();
      const env = { DATABASE_URL: `file:${join(dir, 'fusegate.db')}`, SIGNING_KEY_FILE: join(dir, 'keys.json'), LOG_LEVEL: 'silent' };
      const target = freshPostgresDatabase();
      const [noTarget, fileTarget, pgSource] = await Promise.all([
        runCli(['database', 'copy'], env),
        runCli(['database', 'copy', '--to', `file:${join(dir, 'other.db')}`], env),
        runCli(['database', 'copy', '--to', target], { ...env, DATABASE_URL: target }),
      ]);
      expect([noTarget.code, noTarget.stderr]).toEqual([2, expect.stringContaining('--to is required')]);
      expect([fileTarget.code, fileTarget.stderr]).toEqual([2, expect.stringContaining('--to must be a postgres:// or postgresql:// URL')]);
      expect([pgSource.code, pgSource.stderr]).toEqual([2, expect.stringContaining('DATABASE_URL must name the embedded file')]);
      expect(await rowsOf(target, 'api_keys')).toBe(0);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

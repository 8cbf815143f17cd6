/**
 * Migration 0280 (issue 26): a PAS job's receipts become one list of log
 * indexes per job and batch, instead of a row each. On a database written by
 * main before tiles (test/fixtures/main-7b6fb56.*) with job rows as that code
 * stored them, the examiner appendix lists the same receipts after the
 * upgrade, in log order, each as its log entry states it. Rows naming receipts
 * whose ids carry their index convert the same way, and a row whose receipt is
 * not in the log stops the upgrade with nothing dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { up } from '../src/ledger/migrations/0280_pas_job_receipt_lists.ts';
import { jobReceipts } from '../src/ledger/pas.ts';
import { getReceipt } from '../src/ledger/receipts.ts';
import type { Transaction } from '../src/ledger/sql.ts';
import { startOnOldMain } from './support/old-main.ts';
import { commitReceipts } from './support/receipts.ts';
import { startTestServer, type TestServer } from './support/server.ts';

/** The table as migration 0030 made it, and its rows as the code before 0280 wrote them. */
const OLD_TABLE = `CREATE TABLE pas_job_receipts (
  key_id TEXT NOT NULL, job_id TEXT NOT NULL, receipt_id TEXT NOT NULL, kind TEXT NOT NULL,
  decision TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (key_id, job_id, receipt_id))`;
const OLD_ROW = 'INSERT INTO pas_job_receipts (key_id, job_id, receipt_id, kind, decision, created_at) VALUES (?, ?, ?, ?, ?, ?)';

const tables = async (s: TestServer) =>
  (await s.ctx.ledger.read.execute("SELECT name FROM sqlite_master WHERE type = 'table'")).rows.map((r) => String(r.name));

describe('migration 0280 on job receipts stored one row each, before tiles', () => {
  let s: TestServer;
  /** job → the fixture's receipts listed under it, in log order. */
  const jobs = new Map<string, Array<{ id: string; kind: string; decision: string; at: string }>>();
  beforeAll(async () => {
    s = await startOnOldMain(async (db) => {
      const rs = await db.execute('SELECT id, log_index, kind, decision, created_at FROM receipts ORDER BY log_index LIMIT 7');
      const rows = rs.rows.map((r) => ({ id: String(r.id), kind: String(r.kind), decision: String(r.decision), at: String(r.created_at) }));
      jobs.set('job_a', [rows[0]!, rows[2]!, rows[3]!, rows[6]!]);
      jobs.set('job_b', [rows[1]!]);
      // Inserted out of log order, as ids sort: the lists must come back in log order.
      for (const [job, list] of jobs)
        for (const r of [...list].reverse()) await db.execute({ sql: OLD_ROW, args: ['key_owner', job, r.id, r.kind, r.decision, r.at] });
    });
  }, 60_000);
  afterAll(() => s.stop());

  it('lists the same receipts, in log order, read from the log; the per-receipt table is gone', async () => {
    for (const [job, list] of jobs) {
      const listed = await jobReceipts(s.ctx.ledger.read, 'key_owner', job);
      expect(listed.map((r) => r.receipt_id)).toEqual(list.map((r) => r.id));
      expect(listed.map((r) => `${r.kind} ${r.decision}`)).toEqual(list.map((r) => `${r.kind} ${r.decision}`));
      for (const r of listed) expect((await getReceipt(s.ctx.ledger.read, r.receipt_id))!.payload.issued_at).toBe(r.created_at);
    }
    expect(await jobReceipts(s.ctx.ledger.read, 'key_other', 'job_a')).toEqual([]);
    expect(await tables(s)).not.toContain('pas_job_receipts');
    expect(await tables(s)).toContain('pas_job_receipt_lists');
  });
});

describe('migration 0280 on receipts whose ids carry their index', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  /** Puts the old table back with `rows`, then runs the migration in one transaction. */
  const migrate = (rows: Array<[string, string]>) =>
    s.ctx.ledger.write(async (tx: Transaction) => {
      await tx.execute('DROP TABLE pas_job_receipt_lists');
      await tx.execute(OLD_TABLE);
      for (const [job, id] of rows)
        await tx.execute({ sql: OLD_ROW, args: ['key_owner', job, id, 'pas_bind_check', 'ALLOW', '2026-11-26T00:00:00.000Z'] });
      await up(tx);
    });

  it('converts them, and refuses a receipt that is not in the log, dropping nothing', async () => {
    const made = await commitReceipts(
      s.ctx.ledger,
      s.ctx,
      Array.from({ length: 12 }, (_, i) => ({ kind: 'pas_bind_check', decision: i % 3 ? 'ALLOW' : 'BLOCK', subject: `job_${i % 2}` })),
    );
    const ids = made.map((r) => r.receipt_id);
    await migrate(ids.map((id, i) => [`job_${i % 2}`, id]));
    for (const job of [0, 1]) {
      const listed = await jobReceipts(s.ctx.ledger.read, 'key_owner', `job_${job}`);
      expect(listed.map((r) => r.receipt_id)).toEqual(ids.filter((_, i) => i % 2 === job));
      expect(listed.map((r) => r.decision)).toEqual(made.filter((_, i) => i % 2 === job).map((r) => r.payload.decision));
    }

    const missing = `rcpt_${ids.length + 1000}_${'A'.repeat(22)}`;
    await expect(
      migrate([
        ['job_0', ids[0]!],
        ['job_0', missing],
      ]),
    ).rejects.toThrow(`receipt ${missing} is not in the receipts log`);
    // The failed upgrade's transaction changed nothing: the lists written above are still there.
    expect((await jobReceipts(s.ctx.ledger.read, 'key_owner', 'job_1')).map((r) => r.receipt_id)).toEqual(
      ids.filter((_, i) => i % 2 === 1),
    );
    expect(await tables(s)).not.toContain('pas_job_receipts');
  });
});

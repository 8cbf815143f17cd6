/**
 * Migration 0270 (issue 26): clear acts become counters per (month, key,
 * decision). On a database written by main before it (test/fixtures/main-7b6fb56.*)
 * with clear acts stored as that code stored them, one row each, the month
 * figures read after the upgrade are exactly the old rows' figures: acts by
 * decision, cleared exposure (micro remainders carried into whole USD), keys.
 * New acts then add to the same counters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { monthTotals } from '../src/ledger/clear.ts';
import { startOnOldMain } from './support/old-main.ts';
import type { TestServer } from './support/server.ts';

// [key, decision, exposure in micro-USD, month]: remainders that carry past a dollar, a total past 2^53 micro-USD.
const OLD_ACTS: Array<[string, string, bigint, string]> = [
  ['key_a', 'PERMIT', 1_500_000n, '2026-03'],
  ['key_a', 'PERMIT', 1_500_000n, '2026-03'],
  ['key_a', 'PERMIT', 2_999_999n, '2026-03'],
  ['key_a', 'DENY', 0n, '2026-03'],
  ['key_b', 'GO', 9_000_000_000_000_000n, '2026-03'],
  ['key_b', 'HOLD', 0n, '2026-03'],
  ['key_a', 'PERMIT', 7n, '2026-04'],
];

describe('migration 0270 on clear acts stored one row each', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startOnOldMain(async (db) => {
      for (const [i, [key, decision, exposure, month]] of OLD_ACTS.entries()) {
        await db.execute({
          sql: 'INSERT INTO clear_acts (receipt_id, key_id, vertical, fuse_id, decision, exposure_micros, month, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
          args: [`rcpt_old_${i}`, key, 'agents', 'fuse_old', decision, exposure, month, `${month}-02T00:00:00.000Z`],
        });
      }
    });
  }, 60_000);
  afterAll(() => s.stop());

  it('keeps every month figure exact, and the per-act table is gone', async () => {
    const read = s.ctx.ledger.read;
    expect(await monthTotals(read, '2026-03')).toEqual({
      cleared_micros: 1_500_000n + 1_500_000n + 2_999_999n + 9_000_000_000_000_000n,
      by_decision: { PERMIT: 3, DENY: 1, HOLD: 1, SILENCE: 0, GO: 1 },
      acts: 6,
      keys: 2,
    });
    expect(await monthTotals(read, '2026-03', 'key_a')).toEqual({
      cleared_micros: 5_999_999n,
      by_decision: { PERMIT: 3, DENY: 1, HOLD: 0, SILENCE: 0, GO: 0 },
      acts: 4,
      keys: 1,
    });
    expect(await monthTotals(read, '2026-04', 'key_a')).toMatchObject({ cleared_micros: 7n, acts: 1 });
    // The remainders were carried: 5.999999 USD is stored as 5 USD and 999,999 micro-USD.
    const row = (
      await read.execute(
        "SELECT acts, usd, micros FROM clear_counters WHERE month = '2026-03' AND key_id = 'key_a' AND decision = 'PERMIT'",
      )
    ).rows[0]!;
    expect([row.acts, row.usd, row.micros]).toEqual([3, 5, 999_999]);
    const tables = (await read.execute("SELECT name FROM sqlite_master WHERE type = 'table'")).rows.map((r) => String(r.name));
    expect(tables).not.toContain('clear_acts');
  });

  it('adds new execute-gate answers to the same counters', async () => {
    const key = await s.newKey('after-0270');
    const fuse = (await (await s.fetch('/v1/fuses', { method: 'POST', key: key.secret, json: { state: 'LIVE' } })).json())
      .fuse_id as string;
    const month = new Date().toISOString().slice(0, 7);
    const gate = (exposure: string) =>
      s.fetch('/api/v1/execute-gate', {
        method: 'POST',
        key: key.secret,
        json: { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: exposure },
      });
    const answers = await Promise.all(['0.75', '0.75', '1.50'].map(async (x) => (await gate(x)).json()));
    expect(answers.map((a) => a.decision)).toEqual(['PERMIT', 'PERMIT', 'PERMIT']);
    expect(await monthTotals(s.ctx.ledger.read, month, key.id)).toMatchObject({
      cleared_micros: 3_000_000n,
      acts: 3,
      by_decision: { PERMIT: 3 },
    });
  });
});

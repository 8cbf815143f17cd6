/**
 * How the write queue gathers a batch (ledger/write-queue.ts), on a real
 * database file: writes that keep arriving over the next event-loop turns join
 * one transaction, for at most WRITE_BATCH_GATHER_TURNS turns; a write that
 * comes alone is committed without waiting for company.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { tempDir, TEST_ENGINE, testEnv } from './support/server.ts';

const nextTurn = () => new Promise((r) => setImmediate(r));

let ledger: Ledger | undefined;
afterEach(async () => {
  await ledger?.close();
  ledger = undefined;
});

async function open(gatherTurns: number): Promise<Ledger> {
  ledger = await openLedger(loadConfig(testEnv(tempDir(), { WRITE_BATCH_GATHER_TURNS: String(gatherTurns) })));
  await ledger.write((tx) => tx.execute('CREATE TABLE arrivals (turn INTEGER NOT NULL)'));
  return ledger;
}

/** Queues `perTurn` writes on each of `turns` consecutive event-loop turns; the transactions they took and the rows kept. */
async function arrive(l: Ledger, turns: number, perTurn: number): Promise<{ transactions: number; rows: number }> {
  const before = l.commits();
  const writes: Array<Promise<unknown>> = [];
  for (let turn = 0; turn < turns; turn++) {
    if (turn > 0) await nextTurn();
    for (let i = 0; i < perTurn; i++)
      writes.push(l.write((tx) => tx.execute({ sql: 'INSERT INTO arrivals (turn) VALUES (?)', args: [turn] })));
  }
  await Promise.all(writes);
  const rows = Number((await l.read.execute('SELECT COUNT(*) AS n FROM arrivals')).rows[0]!.n);
  return { transactions: l.commits() - before, rows };
}

describe('a write batch gathers the writes still arriving', () => {
  it('takes writes that arrive over the next turns into one transaction', async () => {
    const l = await open(3);
    expect(await arrive(l, 3, 5)).toEqual({ transactions: 1, rows: 15 });
  });

  // On the embedded file a batch commits within the turn it started (its driver is synchronous);
  // over the network a turn's writes queue behind the batch in flight and commit together.
  it.skipIf(TEST_ENGINE === 'postgres')('with no gathering, commits the writes of each turn apart', async () => {
    const l = await open(0);
    expect(await arrive(l, 3, 5)).toEqual({ transactions: 3, rows: 15 });
  });

  it('stops gathering after its turns when writes never stop coming', async () => {
    const l = await open(2);
    const { transactions, rows } = await arrive(l, 9, 2);
    expect(rows).toBe(18);
    // The first batch waits at most 1 + 2 turns, so the nine turns cannot share one transaction.
    expect(transactions).toBeGreaterThanOrEqual(2);
    expect(transactions).toBeLessThan(9);
  });

  it('commits a lone write without waiting for another', async () => {
    const l = await open(64);
    expect(await arrive(l, 1, 1)).toEqual({ transactions: 1, rows: 1 });
    expect(await arrive(l, 1, 1)).toEqual({ transactions: 1, rows: 2 });
  });

  it('a write no read cache shows (unseen) commits without counting; beside a seen one, the batch counts', async () => {
    const l = await open(0);
    const before = l.commits();
    await l.write((tx) => tx.execute('INSERT INTO arrivals (turn) VALUES (1)'), { unseen: true });
    expect(l.commits()).toBe(before);
    await Promise.all([
      l.write((tx) => tx.execute('INSERT INTO arrivals (turn) VALUES (2)'), { unseen: true }),
      l.write((tx) => tx.execute('INSERT INTO arrivals (turn) VALUES (3)')),
    ]);
    expect(l.commits()).toBe(before + 1);
    expect(Number((await l.read.execute('SELECT COUNT(*) AS n FROM arrivals')).rows[0]!.n)).toBe(3);
  });
});

/**
 * Background jobs run once across the nodes of one database (issue 44 item 2,
 * src/api/jobs.ts `leasedJob`, docs/postgresql.md "Leases"): the node that
 * holds a job's lease runs it, the others do not; a node that stops gives its
 * leases up at once; a node that dies keeps them until they run out, then
 * another takes them over. The lease clock of the surviving node is moved by
 * the test, never waited for.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readLease } from '../src/ledger/leases.ts';
import { spawnNode, type NodeProcess } from './support/nodes.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';

const started: Array<{ stop(): Promise<void> }> = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.stop().catch(() => undefined);
});

/** Which node holds each lease, by job name. */
async function holders(s: TestServer): Promise<Record<string, string | undefined>> {
  const out: Record<string, string | undefined> = {};
  for (const j of s.jobs) out[j.name] = (await readLease(s.ctx.ledger.read, j.name))?.holder;
  return out;
}

describe('job leases across two nodes of one database', () => {
  const dir = tempDir();
  let first: NodeProcess;
  let second: TestServer;
  let now = 0;

  it('the node that started first runs every job; the second runs none', async () => {
    first = await spawnNode(dir, {});
    started.push(first);
    second = await startTestServer({}, dir);
    started.push(second);
    now = Date.now();
    second.ctx.leaseClock = () => now;
    expect(second.jobs.map((j) => j.name)).toEqual(expect.arrayContaining(['clearing seal', 'drill fuse restore']));
    for (const j of second.jobs) await j.turn();
    expect(second.jobs.filter((j) => j.running).map((j) => j.name)).toEqual([]);
    const held = await holders(second);
    for (const j of second.jobs) {
      expect(held[j.name], j.name).toBeDefined();
      expect(held[j.name], j.name).not.toBe(j.holder);
    }
  });

  it('when that node dies, its leases hold until they run out, then the second node takes every job over', async () => {
    const was = await holders(second);
    await first.stop('SIGKILL');
    for (const j of second.jobs) await j.turn();
    expect(second.jobs.filter((j) => j.running)).toEqual([]);
    expect(await holders(second)).toEqual(was);
    // The dead node's last renewal ran out: the next turn (every third of a lease) takes the jobs.
    now += second.config.JOB_LEASE_MS + 1;
    for (const j of second.jobs) await j.turn();
    expect(second.jobs.filter((j) => !j.running).map((j) => j.name)).toEqual([]);
    const held = await holders(second);
    for (const j of second.jobs) expect(held[j.name], j.name).toBe(j.holder);
  });

  it('a node that stops gives its leases up, so a third node takes them at its start', async () => {
    const holding = second.jobs.map((j) => j.holder);
    started.pop();
    await second.close();
    const third = await startTestServer({}, dir);
    started.push(third);
    expect(third.jobs.filter((j) => !j.running).map((j) => j.name)).toEqual([]);
    const held = await holders(third);
    for (const j of third.jobs) {
      expect(held[j.name]).toBe(j.holder);
      expect(holding).not.toContain(held[j.name]);
    }
  });
});

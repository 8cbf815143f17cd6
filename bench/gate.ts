/**
 * Gate core: POST /v1/fuse/hop at 50 connections against the bare node:http
 * baseline answering a POST with a JSON body. Each hop is an act (ledger/acts.ts):
 * decided under the write lock, its receipt appended to the receipts log and
 * its meter row written durably (synchronous=FULL, set-oriented group commit,
 * one seal signed per batch) before it is answered.
 *
 * Then the durable floor (durable-floor.ts): node:http answering only after one
 * FULL group commit of the rows a hop writes, with nothing else. It tells how
 * much of the gap to the bare server is this machine's cost of durability, and
 * the hop is measured against it too.
 */
import { cliJson, compareHttp, spawnBaseline, spawnDurableFloor, spawnServer } from './lib.ts';

export async function benchGate(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    const hop = {
      name: 'POST /v1/fuse/hop',
      method: 'POST' as const,
      path: '/v1/fuse/hop',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fuse_id, action: { kind: 'pay' } }),
    };
    await compareHttp('gate', server, baseline, { ...hop, target: { ratio: 0.3, p99Ms: 20 } });
    const floor = await spawnDurableFloor();
    try {
      await compareHttp('gate', floor, baseline, { ...hop, name: 'durable floor (node:http + one FULL group commit of a hop\'s rows)', path: '/', headers: { 'content-type': 'application/json' } });
      await compareHttp('gate', server, floor, { ...hop, name: 'POST /v1/fuse/hop (baseline: the durable floor)' });
    } finally {
      await floor.stop();
    }
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

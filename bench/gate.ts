/**
 * Gate core: POST /v1/fuse/hop at 50 connections against the bare node:http
 * baseline answering a POST with a JSON body. Each hop is an act (ledger/acts.ts):
 * decided under the write lock, its receipt appended to the receipts log and
 * its meter row written durably (synchronous=FULL, set-oriented group commit,
 * one seal signed per batch) before it is answered.
 */
import { cliJson, compareHttp, spawnBaseline, spawnServer } from './lib.ts';

export async function benchGate(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    await compareHttp('gate', server, baseline, {
      name: 'POST /v1/fuse/hop',
      method: 'POST',
      path: '/v1/fuse/hop',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fuse_id, action: { kind: 'pay' } }),
      target: { ratio: 0.3, p99Ms: 20 },
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

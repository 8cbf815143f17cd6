/**
 * Gate core: POST /v1/fuse/hop at 50 connections against the bare node:http
 * baseline answering a POST with a JSON body. Each hop signs its receipt
 * (Ed25519), appends it to the receipts log and writes its meter row durably
 * (synchronous=FULL, group commit) before answering.
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
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

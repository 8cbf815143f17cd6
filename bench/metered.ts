/**
 * Companion metered APIs: POST /api/v1/execute-gate (decide, sign, and commit
 * hop count, counters, receipt and clear counter durably before answering),
 * POST /api/v1/orn/sharp (a metered write with a batch-sealed receipt and an
 * ORN event record) and a pure read, GET /api/v1/nap/scale, each against the
 * bare node:http baseline.
 */
import { cliJson, compareHttp, spawnBaseline, spawnServer } from './lib.ts';

export async function benchMetered(): Promise<void> {
  const server = await spawnServer();
  const baseline = await spawnBaseline();
  try {
    const { id, key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const { fuse_id } = await cliJson(server.env, ['fuses', 'create', '--key', String(id)]);
    await compareHttp('metered', server, baseline, {
      name: 'POST /api/v1/execute-gate',
      method: 'POST',
      path: '/api/v1/execute-gate',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fuse_id, action: { kind: 'pay' }, exposure_usd: '125.00' }),
      target: { ratio: 0.3 },
    });
    // A keyed metered write whose answer carries no signature of its own: its receipt is batch-sealed, its record an ORN event.
    await compareHttp('metered', server, baseline, {
      name: 'POST /api/v1/orn/sharp',
      method: 'POST',
      path: '/api/v1/orn/sharp',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ graph_id: 'bench', agents_in_graph: 5, events: 3 }),
      target: { ratio: 0.3 },
    });
    await compareHttp('metered', server, baseline, { name: 'GET /api/v1/nap/scale', method: 'GET', path: '/api/v1/nap/scale?acts_per_month=5000000' });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

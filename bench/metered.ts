/**
 * Companion metered APIs: POST /api/v1/execute-gate (decide, sign, and commit
 * hop count, counters, receipt and clear counter durably before answering),
 * POST /api/v1/orn/sharp (a metered write with a batch-sealed receipt and an
 * ORN event record), three more keyed governed writes (the welded act, a
 * trigger publish, an oracle aggregate) and a pure read, GET
 * /api/v1/nap/scale, each against the bare node:http baseline.
 */
import { cliJson, compareHttp, KEYED_WRITE_TARGET, spawnBaseline, spawnServer } from './lib.ts';

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
      target: KEYED_WRITE_TARGET,
    });
    // A keyed metered write whose answer carries no signature of its own: its receipt is batch-sealed, its record an ORN event.
    await compareHttp('metered', server, baseline, {
      name: 'POST /api/v1/orn/sharp',
      method: 'POST',
      path: '/api/v1/orn/sharp',
      headers: { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' },
      body: JSON.stringify({ graph_id: 'bench', agents_in_graph: 5, events: 3 }),
      target: KEYED_WRITE_TARGET,
    });
    // More keyed governed writes, each at the target every one has: the welded act (hop, surface check and a
    // sealed act receipt, on the act lane), a trigger published to the triggers log, an oracle aggregate sealed.
    const keyed = { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' };
    await compareHttp('metered', server, baseline, {
      name: 'POST /v1/act (welded act)',
      method: 'POST',
      path: '/v1/act',
      headers: keyed,
      body: JSON.stringify({ fuse_id, action: { kind: 'pay', amount: '120.00', payee: 'acme' } }),
      target: KEYED_WRITE_TARGET,
    });
    await compareHttp('metered', server, baseline, {
      name: 'POST /signal/trigger/publish',
      method: 'POST',
      path: '/signal/trigger/publish',
      headers: keyed,
      body: JSON.stringify({ template_id: 'ai_model_change', threshold: { metric: 'model_drift_score', operator: 'gte', value: '0.8' } }),
      target: KEYED_WRITE_TARGET,
    });
    await compareHttp('metered', server, baseline, {
      name: 'POST /api/v1/oracle/aggregate',
      method: 'POST',
      path: '/api/v1/oracle/aggregate',
      headers: keyed,
      body: JSON.stringify({
        metric: 'model_drift_score',
        readings: ['network_a', 'network_b', 'network_c', 'first_party'].map((source_id, i) => ({ source_id, value: String(100 + i) })),
      }),
      target: KEYED_WRITE_TARGET,
    });
    await compareHttp('metered', server, baseline, {
      name: 'GET /api/v1/nap/scale',
      method: 'GET',
      path: '/api/v1/nap/scale?acts_per_month=5000000',
    });
  } finally {
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

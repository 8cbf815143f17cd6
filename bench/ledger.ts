/**
 * Companion ledger: ASTL publish and absence witness (keyed, metered,
 * receipted, one durable transaction each) against the bare node:http
 * baseline; then webhook deliveries per second to a loopback receiver.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cliJson, compareHttp, KEYED_WRITE_TARGET, report, spawnBaseline, spawnServer } from './lib.ts';

export async function benchLedger(): Promise<void> {
  const server = await spawnServer({ WEBHOOK_POLL_MS: '50', CLEARING_INTERVAL_HOURS: '0', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  const baseline = await spawnBaseline();
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  try {
    const { key } = await cliJson(server.env, ['keys', 'create', '--name', 'bench']);
    const auth = { authorization: `Bearer ${String(key)}`, 'content-type': 'application/json' };
    let n = 0;
    await compareHttp('ledger', server, baseline, {
      name: 'POST /api/v1/astl/publish',
      method: 'POST',
      path: '/api/v1/astl/publish',
      headers: auth,
      setupRequest: (req) => ({ ...req, body: JSON.stringify({ entity: `bench:${n++ % 1000}`, preset: 'agentic' }) }),
      target: KEYED_WRITE_TARGET,
    });
    await compareHttp('ledger', server, baseline, {
      name: 'POST /api/v1/absence/witness',
      method: 'POST',
      path: '/api/v1/absence/witness',
      headers: auth,
      body: JSON.stringify({ act_kind: 'hire', preset: 'agentic' }),
      target: KEYED_WRITE_TARGET,
    });
    // Webhooks: 500 subscribers on one template, one publish -> 500 deliveries.
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const post = (path: string, body: unknown) => fetch(server.url + path, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    const subs = 500;
    for (let i = 0; i < subs; i++) await post('/signal/trigger/webhooks', { url, template_id: 'incident_sealed' });
    const started = performance.now();
    await post('/signal/trigger/publish', { template_id: 'incident_sealed', threshold: { metric: 'x', operator: 'gt', value: '0' } });
    while (received < subs && performance.now() - started < 60_000) await new Promise((r) => setTimeout(r, 5));
    const secs = (performance.now() - started) / 1000;
    report('ledger', `webhook deliveries (${subs} signed, recorded)`, `${Math.round(received / secs)} deliveries/s`, 'n/a', 'n/a');
  } finally {
    receiver.close();
    await Promise.all([server.stop(), baseline.stop()]);
  }
}

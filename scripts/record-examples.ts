/**
 * Records real responses: for the layer pages' endpoint examples where a route
 * declares no response shape (so no example can be drawn from its schema), and
 * for the API reference's example answers of the gate's everyday operations:
 * starts the service on a temporary database, makes a fuse, hops, a refusal,
 * a classification and a signed execute-gate receipt, then calls each listed
 * endpoint and writes its answer to src/content/recorded-examples.json, with
 * the origins replaced by the build placeholders (the server substitutes its
 * own) and long lists cut to two items. Run after `npm run build`:
 *   node scripts/record-examples.ts
 */
import { writeFileSync } from 'node:fs';
import { startTestServer } from '../test/support/server.ts';
import { BUILD_ORIGINS } from '../src/urls.ts';

const s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0' });
try {
  const key = (await s.newKey('examples')).secret;
  const json = async (path: string, init: RequestInit & { key?: string; json?: unknown } = {}) => {
    const res = await s.fetch(path, { ...init, headers: { accept: 'application/json', ...(init.headers ?? {}) } });
    const text = await res.text();
    return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as unknown) : text };
  };
  // The gate's everyday operations, recorded as they happen (each answer is a state the next call changes).
  const made: Record<string, { status: number; body: unknown }> = {};
  const keep = async (op: string, path: string, init: RequestInit & { key?: string; json?: unknown } = {}) =>
    (made[op] = await json(path, init)).body;
  const fuse = (await keep('POST /v1/fuses', '/v1/fuses', { key, json: { label: 'payments agent' } })) as { fuse_id: string };
  const permit = (await keep('POST /v1/fuse/hop', '/v1/fuse/hop', {
    key,
    json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00' } },
  })) as { receipt_id: string };
  await keep('POST /v1/act', '/v1/act', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00', payee: 'acme' } } });
  await keep('GET /v1/fuse/lookup', `/v1/fuse/lookup?fuse_id=${fuse.fuse_id}`, { key });
  await keep('POST /v1/fuses/{fuse_id}/dead', `/v1/fuses/${fuse.fuse_id}/dead`, { key, method: 'POST' });
  await json('/v1/fuse/hop', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00' } } });
  await keep('POST /v1/fuses/{fuse_id}/charge', `/v1/fuses/${fuse.fuse_id}/charge`, { key, method: 'POST' });
  await keep('GET /v1/fuses', '/v1/fuses?limit=2', { key });
  const agent = (await keep('POST /v1/keys', '/v1/keys', { key, json: { name: 'payments agent' } })) as { id: string; secret: string };
  // A secret, even a throwaway server's, is never written down: the example shows where it goes.
  agent.secret = 'fg_live_… (shown once)';
  await keep('POST /v1/keys/{key_id}/surface', `/v1/keys/${agent.id}/surface`, { key, json: { kinds: ['pay', 'refund'] } });
  await keep('GET /v1/keys', '/v1/keys?limit=2', { key });
  await keep('POST /demo/hop', '/demo/hop', { json: { fuse_id: 'fuse_drill_dead' } });
  const gate = (await json('/api/v1/execute-gate', { key, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00' } } }))
    .body as { receipt: string };
  const size = ((await json('/api/v1/logs/receipts')).body as { tree_size: number }).tree_size;

  const calls: Array<[string, string, RequestInit & { key?: string; json?: unknown }]> = [
    ['GET /api/v1/logs', '/api/v1/logs', {}],
    ['GET /api/v1/logs/{log}', '/api/v1/logs/receipts', {}],
    ['GET /api/v1/logs/{log}/checkpoint', '/api/v1/logs/receipts/checkpoint', {}],
    ['GET /api/v1/logs/{log}/entries', '/api/v1/logs/receipts/entries?start=1&limit=2', {}],
    ['GET /api/v1/logs/{log}/growth', '/api/v1/logs/receipts/growth?points=3', {}],
    ['GET /api/v1/logs/{log}/proof/inclusion', `/api/v1/logs/receipts/proof/inclusion?index=1&tree_size=${size}`, {}],
    ['GET /api/v1/logs/{log}/proof/consistency', `/api/v1/logs/receipts/proof/consistency?from=2&to=${size}`, {}],
    ['GET /crypto/public-key', '/crypto/public-key', {}],
    ['GET /v1/receipts/{receipt_id}', `/v1/receipts/${permit.receipt_id}`, {}],
    ['POST /v1/receipts/verify', '/v1/receipts/verify', { json: { receipt: gate.receipt } }],
    ['POST /v1/classify', '/v1/classify', { key, json: { text: 'wire 5,000 USD to the supplier' } }],
    ['GET /api/v1/absence/scale', '/api/v1/absence/scale', {}],
    ['GET /api/v1/astl/scale', '/api/v1/astl/scale', {}],
    ['GET /api/v1/clearing/catalog', '/api/v1/clearing/catalog', {}],
    ['GET /signal/trigger/feed.json', '/signal/trigger/feed.json', {}],
    ['GET /api/v1/astl/log.json', '/api/v1/astl/log.json', {}],
    ['GET /api/v1/issuer-pays/listings', '/api/v1/issuer-pays/listings', {}],
    ['GET /signal/trigger-oracle', '/signal/trigger-oracle', {}],
    ['GET /signal/trigger/webhooks', '/signal/trigger/webhooks', { key }],
    ['GET /signal/patterns.json', '/signal/patterns.json', { key }],
  ];
  const cut = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.slice(0, 2).map(cut)
      : v && typeof v === 'object'
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]))
        : v;
  const origins = (v: unknown) =>
    JSON.parse(
      JSON.stringify(v)
        .replaceAll(s.ctx.config.BASE_URL, BUILD_ORIGINS.gate)
        .replaceAll(s.ctx.config.SITE_URL, BUILD_ORIGINS.site)
        .replaceAll(new URL(s.ctx.config.SITE_URL).host, 'gate.example.com'),
    ) as unknown;
  const out: Record<string, { status: number; body: unknown }> = {};
  for (const [op, r] of Object.entries(made)) {
    if (r.status >= 200 && r.status < 300) out[op] = { status: r.status, body: origins(cut(r.body)) };
    else console.error(`${op}: ${r.status}, not recorded`);
  }
  for (const [op, path, init] of calls) {
    const r = await json(path, init);
    if (r.status >= 200 && r.status < 300) out[op] = { status: r.status, body: origins(cut(r.body)) };
    else console.error(`${op}: ${r.status}, not recorded`);
  }
  writeFileSync(new URL('../src/content/recorded-examples.json', import.meta.url), JSON.stringify(out, null, 1) + '\n');
  console.log(
    `recorded ${Object.keys(out).length} of ${calls.length + Object.keys(made).length} examples -> src/content/recorded-examples.json`,
  );
} finally {
  await s.stop();
}

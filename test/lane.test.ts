/**
 * The act lane (api/lane.ts): the plain keyed acts that opted in answered
 * before h3, on a real server. What it answers is what the h3 route answers
 * for the same request (the h3 route is reached by adding an Idempotency-Key,
 * which the lane leaves to h3): the same status, headers and body shape, the
 * same problems; and it leaves to h3 everything it does not serve.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lane } from '../src/api/lane.ts';
import { holdCacheClock, startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let agent: string;
let ownerSecret: string;
let fuse: string;
let grant: string;
/** Requests each lane took, by path. */
const taken = new Map<string, number>();

beforeAll(async () => {
  // The lane takes a key only while the auth cache holds it fresh (AUTH_CACHE_MS). A bound of 1 ms passes between
  // any two requests on any machine: the cache's clock, held, is what keeps the key fresh, not the machine's speed.
  s = await startTestServer({ AUTH_CACHE_MS: '1' });
  holdCacheClock(s);
  for (const [path, lane] of s.app.router.lanes) {
    s.app.router.lanes.set(path, ((req, res) => {
      const took = lane(req, res);
      if (took) taken.set(path, (taken.get(path) ?? 0) + 1);
      return took;
    }) as Lane);
  }
  const owner = await s.newKey('owner');
  ownerSecret = owner.secret;
  agent = (await s.newKey('agent', 10_000, 'agent', owner.accountId)).secret;
  fuse = (await (await s.fetch('/v1/fuses', { key: owner.secret, json: { state: 'LIVE' } })).json()).fuse_id;
  // The lane takes keys the auth cache holds: the first call authenticates through h3 and fills it.
  expect((await s.fetch('/v1/fuse/hop', { key: agent, json: { fuse_id: fuse } })).status).toBe(200);
  // An ASTL entry and a trigger before those compared, so that both of their inclusion proofs have a hash (the first leaf's has none).
  expect((await s.fetch('/api/v1/astl/publish', { key: agent, json: { entity: 'agent:lane-first', preset: 'agentic' } })).status).toBe(201);
  expect(
    (
      await s.fetch('/signal/trigger/publish', {
        key: agent,
        json: { template_id: 'ai_model_change', threshold: { metric: 'first', operator: 'gte', value: '1' } },
      })
    ).status,
  ).toBe(201);
  expect((await s.fetch('/v1/pas/licenses/lic_pre/charge', { method: 'POST', key: owner.secret })).status).toBe(200);
  const granted = await s.fetch('/v1/pas/grants', {
    key: owner.secret,
    json: { lines: ['cyber'], states: ['CA'], max_premium: '1000.00', name: 'Lane MGA' },
  });
  expect(granted.status).toBe(201);
  grant = (await granted.json()).grant_id;
  // A first child, so that both pre-binds compared read the parent ARMED.
  expect(
    (
      await s.fetch('/v1/pas/pas-a/pre-bind', {
        key: agent,
        json: { fuse_id: fuse, license_id: 'lic_pre', job_id: 'job_first', write: { op: 'bind' } },
      })
    ).status,
  ).toBe(200);
});
afterAll(() => s?.stop());

let n = 0;
/** POSTs `body` as is (a string) to `path` with the agent's key; through h3 when `viaH3` (an Idempotency-Key). */
async function post(path: string, body: string, viaH3: boolean, headers: Record<string, string> = {}) {
  // The lane takes a key the auth cache holds (for AUTH_CACHE_MS): authenticate it just before.
  if (!viaH3) await (await s.fetch('/v1/me', { key: agent })).arrayBuffer();
  const before = taken.get(path) ?? 0;
  const res = await s.fetch(path, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${agent}`,
      'content-type': 'application/json',
      'x-request-id': `lane-test-${++n}`,
      ...(viaH3 ? { 'idempotency-key': `lane-${n}` } : {}),
      ...headers,
    },
    body,
  });
  return { res, text: await res.text(), laned: (taken.get(path) ?? 0) > before };
}

/** The headers an answer carries, without those that differ per answer by nature. */
const headerNames = (res: Response) =>
  [...res.headers.keys()].filter((h) => !['date', 'content-length', 'keep-alive', 'connection'].includes(h)).sort();

const shape = (v: unknown): unknown =>
  v === null || typeof v !== 'object'
    ? typeof v
    : Array.isArray(v)
      ? v.map(shape)
      : Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]));

describe('the act lane', () => {
  it('is declared for the acts that opted in, and only for them', () => {
    expect([...s.app.router.lanes.keys()].sort()).toEqual([
      '/api/v1/absence/witness',
      '/api/v1/astl/publish',
      '/api/v1/execute-gate',
      '/api/v1/execute-gate/bind',
      '/api/v1/oracle/aggregate',
      '/api/v1/orn/sharp',
      '/signal/trigger/publish',
      '/v1/act',
      '/v1/fuse/hop',
      '/v1/pas/bind-check',
      '/v1/pas/bind-ticket/redeem',
      '/v1/pas/mga-authority',
      '/v1/pas/pas-a/pre-bind',
      '/v1/pas/pas-b/pre-bind',
      '/v1/prefinality/evaluate',
    ]);
  });

  it('answers a plain hop, welded act and evaluate as the h3 route answers them: status, headers, body', async () => {
    const transfer = {
      amount: '125.00',
      currency: 'USD',
      account_number: '000123456789',
      routing_number: '021000021',
      counterparty: 'ACME Supplies LLC',
    };
    for (const [path, body, status] of [
      ['/v1/fuse/hop', { fuse_id: fuse, action: { kind: 'pay', amount: '3.00' } }, 200],
      ['/v1/act', { fuse_id: fuse, action: { kind: 'pay', amount: '3.00' } }, 200],
      ['/v1/prefinality/evaluate', { rail: 'rtp', transfer }, 200],
      ['/v1/prefinality/evaluate', { rail: 'rtp', transfer: { ...transfer, routing_number: undefined } }, 403],
      ['/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '125.00' }, 200],
      ['/api/v1/execute-gate/bind', { fuse_id: fuse, bind: { policy_ref: 'POL-1' }, exposure_usd: '250.00' }, 200],
      ['/api/v1/absence/witness', { act_kind: 'wire', preset: 'hiring' }, 200],
      ['/api/v1/astl/publish', { entity: 'agent:lane-test', preset: 'agentic' }, 201],
      ['/api/v1/orn/sharp', { graph_id: 'lane', agents_in_graph: 5, events: 3 }, 200],
      ['/v1/pas/bind-check', { fuse_id: fuse, job_id: 'job_lane' }, 200],
      ['/v1/pas/pas-a/pre-bind', { fuse_id: fuse, license_id: 'lic_pre', job_id: 'job_lane', write: { op: 'bind', policy: 'P-1' } }, 200],
      ['/v1/pas/pas-a/pre-bind', { fuse_id: fuse, license_id: 'lic_unsigned', job_id: 'job_lane', spend_fingerprint: 'a'.repeat(64) }, 409],
      ['/v1/pas/pas-b/pre-bind', { fuse_id: fuse, license_id: 'lic_pre', job_id: 'job_lane' }, 409],
      ['/v1/pas/mga-authority', { fuse_id: fuse, grant_id: 'GRANT', premium: '999.00', line: 'cyber', state: 'CA' }, 200],
      ['/v1/pas/mga-authority', { fuse_id: fuse, grant_id: 'GRANT', premium: '1000.01', line: 'marine', state: 'CA' }, 403],
      ['/signal/trigger/publish', { template_id: 'ai_model_change', threshold: { metric: 'lane', operator: 'gte', value: '1' } }, 201],
      [
        '/api/v1/oracle/aggregate',
        { metric: 'lane', readings: ['network_a', 'network_b', 'network_c'].map((source_id) => ({ source_id, value: '100' })) },
        200,
      ],
    ] as const) {
      // The grant is made in beforeAll, after this table is written.
      const text = JSON.stringify(body).replace('"GRANT"', JSON.stringify(grant));
      const lane = await post(path, text, false);
      const h3 = await post(path, text, true);
      expect([lane.laned, h3.laned], path).toEqual([true, false]);
      expect(lane.res.status, path).toBe(status);
      expect(lane.res.status).toBe(h3.res.status);
      expect(headerNames(lane.res), path).toEqual(
        headerNames(h3.res).filter((h) => h !== 'idempotency-key' && h !== 'idempotent-replayed'),
      );
      expect(lane.res.headers.get('content-type')).toBe(h3.res.headers.get('content-type'));
      expect(lane.res.headers.get('x-request-id')).toBe(`lane-test-${n - 1}`);
      expect(lane.res.headers.get('access-control-allow-origin')).toBe('*');
      const [a, b] = [JSON.parse(lane.text), JSON.parse(h3.text)];
      expect(shape(a), path).toEqual(shape(b));
      const id = (v: Record<string, string>) => v.receipt_id ?? v.witness_id;
      if (path.includes('astl') || path.includes('trigger')) expect(typeof a.checkpoint.note).toBe('string');
      else if (path.includes('sharp')) expect([a.charge.sku, a.charge.amount_usd]).toEqual([b.charge.sku, b.charge.amount_usd]);
      else if (path.includes('oracle')) expect([a.status, a.value, a.charge.sku]).toEqual([b.status, b.value, b.charge.sku]);
      else if (path.includes('bind-check')) expect([a.decision, a.allow]).toEqual([b.decision, b.allow]);
      else if (path.includes('authority')) expect([a.decision, a.failed, a.limits]).toEqual([b.decision, b.failed, b.limits]);
      else if (path.includes('pre-bind'))
        expect([a.decision, a.next_step ?? a.result, a.license_state, a.ticket?.state]).toEqual([
          b.decision,
          b.next_step ?? b.result,
          b.license_state,
          b.ticket?.state,
        ]);
      else if (!path.includes('absence'))
        expect(a.decision).toBe(status === 200 ? (path.includes('prefinality') ? 'GO' : 'PERMIT') : 'NO_GO');
      expect(id(a)).not.toBe(id(b));
      // The receipt is in the log like any other.
      expect((await s.fetch(`/v1/receipts/${id(a)}`, { headers: { accept: 'application/json' } })).status).toBe(200);
    }
  });

  it('answers a PAS redeem as the h3 route does: the ALLOW, then a HALT replay each way', async () => {
    const write = { op: 'bind', policy: 'P-lane', premium: '10.00' };
    // The owner charges the licence and issues the ticket; its agent redeems it.
    expect((await s.fetch('/v1/pas/licenses/lic_lane/charge', { method: 'POST', key: ownerSecret })).status).toBe(200);
    const pre = await s.fetch('/v1/pas/pas-a/pre-bind', {
      key: ownerSecret,
      json: { fuse_id: fuse, license_id: 'lic_lane', job_id: 'job_lane', write },
    });
    const ticket_id = (await pre.json()).ticket.ticket_id;
    const body = JSON.stringify({ ticket_id, write, now: new Date().toISOString() });
    const allow = await post('/v1/pas/bind-ticket/redeem', body, false);
    expect([allow.laned, allow.res.status, JSON.parse(allow.text).decision]).toEqual([true, 200, 'ALLOW']);
    const lane = await post('/v1/pas/bind-ticket/redeem', body, false);
    const h3 = await post('/v1/pas/bind-ticket/redeem', body, true);
    expect([lane.laned, h3.laned]).toEqual([true, false]);
    expect([lane.res.status, h3.res.status]).toEqual([409, 409]);
    expect(headerNames(lane.res)).toEqual(headerNames(h3.res).filter((h) => h !== 'idempotency-key' && h !== 'idempotent-replayed'));
    const [a, b] = [JSON.parse(lane.text), JSON.parse(h3.text)];
    expect(shape(a)).toEqual(shape(b));
    expect([a.decision, a.reason, b.reason]).toEqual(['HALT', 'replay', 'replay']);
    expect(a.receipt_id).not.toBe(b.receipt_id);
  });

  it('refuses bad input with the same problem as the h3 route, and writes nothing', async () => {
    const size = async () => ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { tree_size: number }).tree_size;
    const before = await size();
    const cases: Array<[string, string, number, string]> = [
      ['malformed JSON', '{"fuse_id":', 400, 'malformed_json'],
      ['a field wrong', JSON.stringify({ fuse_id: fuse, action: { kind: 7 } }), 400, 'invalid_body'],
      ['an unknown field', JSON.stringify({ fuse_id: fuse, extra: true }), 400, 'invalid_body'],
      ['an empty body', '', 400, 'empty_body'],
      ['not UTF-8', '{"fuse_id":"\udc00"}', 400, 'invalid_utf8'],
      ['an unknown fuse', JSON.stringify({ fuse_id: 'fuse_AAAAAAAAAAAAAAAAAAAAAA' }), 404, 'unknown_fuse'],
      [
        'a body past the limit',
        JSON.stringify({ fuse_id: fuse, action: { kind: 'pay', note: 'x'.repeat(s.config.MAX_BODY_BYTES) } }),
        413,
        'body_too_large',
      ],
    ];
    for (const [what, body, status, code] of cases) {
      const bytes = what === 'not UTF-8' ? Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]) : body;
      const lane = await post('/v1/fuse/hop', bytes as string, false);
      const h3 = await post('/v1/fuse/hop', bytes as string, true);
      expect(lane.laned, what).toBe(status !== 413);
      expect([lane.res.status, JSON.parse(lane.text).code], what).toEqual([status, code]);
      expect([h3.res.status, JSON.parse(h3.text).code], what).toEqual([status, code]);
      expect(lane.res.headers.get('content-type'), what).toBe('application/problem+json');
      const { instance, ...problem } = JSON.parse(lane.text);
      const { instance: _, ...same } = JSON.parse(h3.text);
      expect(problem, what).toEqual(same);
      expect(instance).toBe('/v1/fuse/hop');
    }
    expect(await size()).toBe(before);
  });

  it('leaves to h3 what it does not serve: no key, an unknown key, another content type, a payment', async () => {
    const hop = JSON.stringify({ fuse_id: fuse });
    const before = taken.get('/v1/fuse/hop') ?? 0;
    const plain = (headers: Record<string, string>) =>
      s.fetch('/v1/fuse/hop', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: hop });
    expect((await plain({})).status).toBe(401);
    expect((await plain({ authorization: 'Bearer fg_unknown' })).status).toBe(401);
    expect((await plain({ authorization: `Bearer ${agent}`, 'content-type': 'text/plain' })).status).toBe(415);
    // A payment beside a key, with x402 off: the h3 route acts on the key.
    expect((await plain({ authorization: `Bearer ${agent}`, 'payment-signature': 'e30' })).status).toBe(200);
    expect(taken.get('/v1/fuse/hop') ?? 0).toBe(before);
  });
});

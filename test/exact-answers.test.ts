/**
 * What an answer shows about money is what was charged, labelled for what it
 * covers (issue 45): a welded act shows one list of its charges; GET /v1/me
 * shows this period's tolls under the period and the key's lifetime tolls
 * under `lifetime`; an exposure ceiling is accepted as a decimal string like
 * every other amount.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addToCounters } from '../src/ledger/meter.ts';
import type { Receipt } from '../src/ledger/receipts.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

type J = Record<string, any>;

let s: TestServer;
let key: { id: string; secret: string; accountId: string };
let fuse: string;
const post = async (path: string, json: unknown, k = key.secret) => {
  const r = await s.fetch(path, { method: 'POST', json, key: k });
  return { status: r.status, body: (await r.json()) as J };
};

beforeAll(async () => {
  s = await startTestServer();
  key = await s.newKey('exact-answers');
  fuse = (await post('/v1/fuses', { state: 'LIVE' })).body.fuse_id;
});
afterAll(() => s.stop());

describe('a welded act shows one list of what it charged', () => {
  it('an act that acted: charges execute_gate 0.10 and seal 0.05, no single charge beside them, and they are the meter lines', async () => {
    const { status, body } = await post('/v1/act', { fuse_id: fuse, action: { kind: 'pay' } });
    expect(status).toBe(200);
    expect(body).not.toHaveProperty('charge');
    expect(body.charges).toEqual([
      { sku: 'execute_gate', amount_usd: '0.10', nap: false },
      { sku: 'seal', amount_usd: '0.05', nap: false },
    ]);
    const lines = (await chargesOf(s.ctx.ledger.read, key.id))
      .filter((c) => c.ref === body.receipt_id)
      .map((c) => [c.sku, c.amount_micros]);
    expect(lines).toEqual([
      ['execute_gate', 100_000],
      ['seal', 50_000],
    ]);
  });

  it('a refused act: the NAP hold alone', async () => {
    const dead = (await post('/v1/fuses', { state: 'LIVE' })).body.fuse_id;
    await post(`/v1/fuses/${dead}/dead`, undefined);
    const { status, body } = await post('/v1/act', { fuse_id: dead, action: { kind: 'pay' } });
    expect(status).toBe(200);
    expect(body).toMatchObject({ acted: false, charges: [{ sku: 'hold', amount_usd: '0.50', nap: true }] });
    expect(body).not.toHaveProperty('charge');
  });
});

describe('GET /v1/me: this period and the lifetime, each named', () => {
  it("usage holds this period's tolls beside its hops; lifetime holds every toll since the key was made", async () => {
    const daily = (await post('/v1/keys', { name: 'daily', role: 'agent', hop_period: 'day' })).body;
    const k = daily.key ?? daily.secret;
    const f = (await post('/v1/fuses', { state: 'LIVE' })).body.fuse_id;
    // Charged today: one classify (0.05) and one hop (0.10).
    expect((await post('/v1/classify', { text: 'wire 5,000 USD to the supplier' }, k)).status).toBe(200);
    expect((await post('/v1/fuse/hop', { fuse_id: f }, k)).status).toBe(200);
    // Charged yesterday, before this period began: a seal of 0.05, counted as the ledger counts every charge.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString();
    await s.ctx.ledger.write((tx) =>
      addToCounters(tx, [
        { payload: { key_id: daily.id, issued_at: yesterday, charges: [{ sku: 'seal', amount_micros: 50_000 }] } } as unknown as Receipt,
      ]),
    );

    const me = (await (await s.fetch('/v1/me', { key: k })).json()) as J;
    expect(me.usage).toMatchObject({ period: 'day', hops_used: 1, total_usd: '0.15', nap_usd: '0.00' });
    expect(me.usage.period_start).toBe(new Date(new Date().toISOString().slice(0, 10)).toISOString());
    expect(me.usage.tolls.map((t: J) => t.sku).sort()).toEqual(['classify', 'execute_gate']);
    expect(me.lifetime).toMatchObject({ since: daily.created_at, total_usd: '0.20', nap_usd: '0.00' });
    expect(me.lifetime.tolls.map((t: J) => [t.sku, t.amount_usd]).sort()).toEqual([
      ['classify', '0.05'],
      ['execute_gate', '0.10'],
      ['seal', '0.05'],
    ]);
  });

  it('a key whose period is "none" has one period: both agree', async () => {
    const ever = (await post('/v1/keys', { name: 'ever', role: 'agent', hop_period: 'none' })).body;
    const k = ever.key ?? ever.secret;
    expect((await post('/v1/classify', { text: 'pay the invoice' }, k)).status).toBe(200);
    const me = (await (await s.fetch('/v1/me', { key: k })).json()) as J;
    expect(me.usage).toMatchObject({ period: 'none', period_start: null, total_usd: '0.05' });
    expect(me.lifetime).toMatchObject({ total_usd: '0.05', tolls: me.usage.tolls });
  });
});

describe('trigger publish: obligation.exposure_ceiling_usd is a decimal string like every other amount', () => {
  const publish = (exposure_ceiling_usd: unknown, template_id = 'ai_model_change') =>
    post('/signal/trigger/publish', {
      template_id,
      threshold: { metric: 'drift', operator: 'gte', value: '1' },
      obligation: { exposure_ceiling_usd, ...(template_id === 'custom' ? { callable_actions: ['bind_hold'] } : {}) },
    });

  it('accepts "2500000.00" and "2500000" as the whole USD ceiling they state', async () => {
    for (const ceiling of ['2500000.00', '2500000']) {
      const { status, body } = await publish(ceiling);
      expect(status, ceiling).toBe(201);
      expect(body.obligation_surface.exposure_ceiling_usd, ceiling).toBe(2_500_000);
    }
    const custom = await publish('20000000.00', 'custom');
    expect(custom.status).toBe(201);
    expect(custom.body.obligation_surface).toMatchObject({ exposure_ceiling_usd: 20_000_000, fee_bps: null });
  });

  it('still accepts the whole JSON number it accepted before', async () => {
    const { status, body } = await publish(2_500_000);
    expect(status).toBe(201);
    expect(body.obligation_surface.exposure_ceiling_usd).toBe(2_500_000);
  });

  it('refuses cents, zero, a fraction as a number, and more than the template: 400 naming the field, nothing charged', async () => {
    const before = (await chargesOf(s.ctx.ledger.read, key.id)).length;
    for (const bad of ['2500000.50', '0.00', '1,000', 2_500_000.5, '5000001']) {
      const { status, body } = await publish(bad);
      expect(status, String(bad)).toBe(400);
      expect(body.errors?.[0]?.field ?? body.detail, String(bad)).toContain('obligation.exposure_ceiling_usd');
    }
    expect((await chargesOf(s.ctx.ledger.read, key.id)).length).toBe(before);
  });
});

/**
 * Every published price buys something, every charge is shown, the public log
 * tells no secrets (issue 29): the operator checkout's months, the bps fee on
 * cleared exposure billed per month, no silent maximum billable base, the
 * Clear-tier fallback of a fire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let key: { id: string; secret: string };
const post = (path: string, json: unknown, k: string = key.secret) => s.fetch(path, { method: 'POST', json, key: k });
const meter = async (keyId: string, server: TestServer = s) =>
  (await server.ctx.ledger.read.execute({ sql: 'SELECT sku, amount_micros, ref FROM meter WHERE key_id = ? ORDER BY id', args: [keyId] })).rows.map((r) => ({
    sku: String(r.sku),
    micros: Number(r.amount_micros),
    ref: String(r.ref),
  }));
const thisMonth = () => new Date().toISOString().slice(0, 7);
const monthsFromNow = (n: number) => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 1)).toISOString().slice(0, 7);
};

beforeAll(async () => {
  s = await startTestServer({ DEMO_RATE_LIMIT: '1000' });
  key = await s.newKey('truth');
});
afterAll(() => s.stop());

describe('1. operator checkout: only months the key existed in and that have ended', () => {
  it('a month before the key existed is 422 month_not_checkable, charging nothing', async () => {
    const before = await meter(key.id);
    for (const month of ['1970-01', monthsFromNow(-1)]) {
      const r = await post('/v1/operator/checkout', { month });
      expect(r.status, month).toBe(422);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      const b = await r.json();
      expect(b).toMatchObject({ code: 'month_not_checkable', month, key_created_month: thisMonth() });
      expect(b.errors[0].field).toBe('month');
    }
    expect(await meter(key.id)).toEqual(before);
  });

  it('a month not begun is 422; the current one stays 409 period_open (as documented)', async () => {
    const future = await post('/v1/operator/checkout', { month: monthsFromNow(1) });
    expect(future.status).toBe(422);
    expect((await future.json()).code).toBe('month_not_checkable');
    const open = await post('/v1/operator/checkout', { month: thisMonth() });
    expect(open.status).toBe(409);
  });
});

describe('2. the bps fee on cleared exposure, billed per month at the tiers', () => {
  let o: TestServer;
  let k: { id: string; secret: string };
  beforeAll(async () => {
    o = await startTestServer({ OPERATOR_FLOOR_USD: '0.10' });
    k = await o.newKey('bps', 1000);
  });
  afterAll(() => o.stop());

  it('/v1/me shows the open month\'s accruing fee and the tier its cleared USD reaches', async () => {
    // A GO clears its USD amount (a GO this large is held for review: the row stands for many).
    await o.ctx.ledger.write((tx) =>
      tx.execute({ sql: "INSERT INTO clear_acts (receipt_id, key_id, vertical, fuse_id, decision, exposure_micros, month, created_at) VALUES ('rcpt_now', ?, 'prefinality', 'f', 'GO', 12000000000000, ?, ?)", args: [k.id, thisMonth(), new Date().toISOString()] }),
    );
    const me = await (await o.fetch('/v1/me', { key: k.secret })).json();
    // 10,000,000 x 2 bps = 2,000.00, plus 2,000,000 x 1 bps = 200.00: the month reached growth.
    expect(me.operator_checkout.clear_bps).toEqual({
      sku: 'clear_bps',
      cleared_exposure_usd: '12000000.00',
      tier: { id: 'growth', bps: 1 },
      fee_usd: '2200.00',
      graduated: true,
      billed: false,
    });
  });

  it('the checkout of a closed month bills clear_bps beside its true-up, on the statement and the meter, once', async () => {
    const month = '2026-02';
    // A key carried over from an earlier ledger: its acts of that month are on record.
    await o.ctx.ledger.write(async (tx) => {
      await tx.execute({ sql: "INSERT INTO clear_acts (receipt_id, key_id, vertical, fuse_id, decision, exposure_micros, month, created_at) VALUES ('rcpt_feb', ?, 'agents', 'f', 'PERMIT', 150000000000000, ?, '2026-02-03T00:00:00.000Z')", args: [k.id, month] });
    });
    const before = (await meter(k.id, o)).length;
    const r = await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month } });
    expect(r.status).toBe(201);
    const c = await r.json();
    // 150,000,000 cleared: 2,000.00 + 9,000.00 + 2,500.00 (50,000,000 x 0.5 bps) = 13,500.00, tier network.
    expect(c.clear_bps).toEqual({ sku: 'clear_bps', cleared_exposure_usd: '150000000.00', tier: { id: 'network', bps: 0.5 }, fee_usd: '13500.00', graduated: true, billed: true });
    // The operator true-up is unchanged by it: 10 bps of 150,000,000 = 150,000.00, nothing charged -> 150,000.00.
    expect(c).toMatchObject({ due_usd: '150000.00', checkout_usd: '150000.00', total_usd: '163500.00', charge: { sku: 'operator_checkout', amount_usd: '150000.00' } });
    expect(c.charges).toEqual([
      { sku: 'clear_bps', amount_usd: '13500.00', nap: false },
      { sku: 'operator_checkout', amount_usd: '150000.00', nap: false },
    ]);
    expect((await meter(k.id, o)).slice(before)).toEqual([
      { sku: 'clear_bps', micros: 13_500_000_000, ref: c.receipt_id },
      { sku: 'operator_checkout', micros: 150_000_000_000, ref: c.receipt_id },
    ]);
    const again = await (await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month } })).json();
    expect(again).toMatchObject({ receipt_id: c.receipt_id, clear_bps: { fee_usd: '13500.00', billed: true } });
    expect((await meter(k.id, o)).length).toBe(before + 2);
    // The bps line of February, written now, is not a per-act charge of this month.
    const me = await (await o.fetch('/v1/me', { key: k.secret })).json();
    expect(me.operator_checkout.charged_usd).toBe('0.00');
  });
});

describe('4. no silent maximum billable base; 2. the Clear-tier fallback of a fire', () => {
  const threshold = { metric: 'drift', operator: 'gte', value: '1' };

  it('a trigger published without an enabled exposure fires for bps_fire and a 0.00 bps_fee, never the ceiling', async () => {
    const t = await (await post('/signal/trigger/publish', { template_id: 'bind_gate_hold', threshold })).json();
    expect(t.enabled_exposure_usd).toBe('0.00');
    const f = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '2' })).json();
    expect(f.fire.fee).toMatchObject({ bps: 50, on_exposure_usd: '0.00', amount_usd: '0.00' });
    expect((await meter(key.id)).filter((m) => m.ref === f.receipt_id)).toEqual([
      { sku: 'bps_fire', micros: 1_000_000, ref: f.receipt_id },
      { sku: 'bps_fee', micros: 0, ref: f.receipt_id },
    ]);
  });

  it('a custom obligation (no template, no fee_bps of its own) fires at the Clear tier, graduated', async () => {
    const k2 = await s.newKey('fallback');
    const missing = await post('/signal/trigger/publish', { template_id: 'custom', threshold }, k2.secret);
    expect(missing.status).toBe(400);
    expect((await missing.json()).errors[0].field).toBe('obligation.callable_actions');
    const fee = await post('/signal/trigger/publish', { template_id: 'custom', threshold, obligation: { callable_actions: ['bind_hold'], exposure_ceiling_usd: 20000000, fee_bps: 25 } }, k2.secret);
    expect(fee.status).toBe(422);
    expect((await fee.json()).code).toBe('fee_bps_fixed');
    const t = await (
      await post('/signal/trigger/publish', { template_id: 'custom', threshold, obligation: { callable_actions: ['bind_hold'], exposure_ceiling_usd: 20000000 }, enabled_exposure_usd: '12000000.00' }, k2.secret)
    ).json();
    expect(t.obligation_surface).toMatchObject({ fee_bps: null, exposure_ceiling_usd: 20000000 });
    const f = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '2' }, k2.secret)).json();
    // 10,000,000 x 2 bps + 2,000,000 x 1 bps = 2,200.00; the month's last dollar is in growth.
    expect(f.fire.fee).toMatchObject({ bps: 1, source: 'clear_tier', tier: 'growth', amount_usd: '2200.00' });
    expect((await meter(k2.id)).filter((m) => m.ref === f.receipt_id).map((m) => [m.sku, m.micros])).toEqual([
      ['bps_fire', 1_000_000],
      ['bps_fee', 2_200_000_000],
    ]);
  });
});

describe('3. every answer that charges shows its charge; a charged refusal names its receipt', () => {
  const lines = async (receiptId: string) => (await meter(key.id)).filter((m) => m.ref === receiptId).map((m) => ({ sku: m.sku, amount_usd: (m.micros / 1e6).toFixed(2) }));
  let live: string;
  let dead: string;
  beforeAll(async () => {
    live = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
    dead = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
    await post(`/v1/fuses/${dead}/dead`, undefined);
  });

  it('hop and act: the charge shown is the line the act wrote', async () => {
    const hop = await (await post('/v1/fuse/hop', { fuse_id: live })).json();
    expect(hop.charge).toEqual({ sku: 'execute_gate', amount_usd: '0.10', nap: false });
    expect(await lines(hop.receipt_id)).toEqual([{ sku: 'execute_gate', amount_usd: '0.10' }]);
    const refused = await (await post('/v1/fuse/hop', { fuse_id: dead })).json();
    expect(refused.charge).toMatchObject({ sku: 'hold', nap: true });
    expect(await lines(refused.receipt_id)).toEqual([{ sku: 'hold', amount_usd: refused.charge.amount_usd }]);
    const act = await (await post('/v1/act', { fuse_id: live, action: { kind: 'pay', amount: '1.00' } })).json();
    expect(act.charges.map((c: { sku: string; amount_usd: string }) => ({ sku: c.sku, amount_usd: c.amount_usd }))).toEqual(await lines(act.receipt_id));
    expect(act.charges.map((c: { sku: string }) => c.sku)).toEqual(['execute_gate', 'seal']);
    const demo = await (await s.fetch('/demo/hop', { method: 'POST', json: {} })).json();
    expect(demo.charge).toBeNull();
  });

  it('classify shows its toll', async () => {
    const c = await (await post('/v1/classify', { text: 'wire 5,000 USD to the supplier' })).json();
    expect(c.charge).toMatchObject({ sku: 'classify', nap: false });
    expect(await lines(c.receipt_id)).toEqual([{ sku: 'classify', amount_usd: c.charge.amount_usd }]);
  });

  it('every PAS decision shows its charge (ALLOW and refusals alike)', async () => {
    const allow = await post('/v1/pas/bind-check', { fuse_id: live, job_id: 'job_charge_1' });
    const a = await allow.json();
    expect(a.charge).toMatchObject({ sku: 'execute_gate', nap: false });
    const block = await post('/v1/pas/bind-check', { fuse_id: dead, job_id: 'job_charge_2' });
    expect(block.status).toBe(403);
    const b = await block.json();
    expect(b.charge).toMatchObject({ sku: 'hold', nap: true });
    for (const x of [a, b]) expect(await lines(x.receipt_id)).toEqual([{ sku: x.charge.sku, amount_usd: x.charge.amount_usd }]);
  });

  it('the keyed RR-1 428 names its charge and the receipt sealing it; an anonymous one charges nothing and names none', async () => {
    const r = await s.fetch('/api/v1/require-receipt/demo/pay', { method: 'POST', json: {}, key: key.secret });
    expect(r.status).toBe(428);
    const b = await r.json();
    expect(b.charge).toEqual({ sku: 'rr1_challenge', amount_usd: '0.02', nap: false });
    expect(b.receipt_id).toMatch(/^rcpt_/);
    expect(await lines(b.receipt_id)).toEqual([{ sku: 'rr1_challenge', amount_usd: '0.02' }]);
    expect((await s.fetch(new URL(b.verify_url).pathname)).status).toBe(200);
    const anon = await (await s.fetch('/api/v1/require-receipt/demo/pay', { method: 'POST', json: {} })).json();
    expect(anon.charge).toBeUndefined();
    expect(anon.receipt_id).toBeUndefined();
  });
});

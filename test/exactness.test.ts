/**
 * Every charge and decision exactly right (issue 15): the settlement fee is the
 * template's, every charge has a receipt that a clearing attestation covers,
 * tiers never charge less for more, a GO receipt clears one payment order once
 * for its own key, PAS-A refusals are non-2xx, UNSIGNED is one rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { graduatedFeeMicros, marginalFeeMicros } from '../src/domain/bps-tiers.ts';
import { fireFee } from '../src/domain/trigger.ts';
import { sealNow } from '../src/api/site/clearing.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

// The Clear tiers as SPEC 2.4 writes them (not read from the code under test).
const TIERS = [
  { id: 'starter', bps: 2, cleared_usd_monthly_up_to: 10_000_000 },
  { id: 'growth', bps: 1, cleared_usd_monthly_up_to: 100_000_000 },
  { id: 'network', bps: 0.5, cleared_usd_monthly_up_to: null },
];
const usd = (text: string) => BigInt(text.replace('.', '')) * 10_000n; // "1.23" (two decimals) -> micro-USD
const TWO_DECIMALS = /^\d+\.\d{2}$/;

let s: TestServer;
let key: { id: string; secret: string };
let other: { id: string; secret: string };
const post = (path: string, json: unknown, k: string | undefined = key.secret) =>
  s.fetch(path, { method: 'POST', json, ...(k ? { key: k } : {}) });
const meter = async (keyId: string) =>
  (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, ref: r.ref }));

beforeAll(async () => {
  s = await startTestServer({ DEMO_RATE_LIMIT: '1000' });
  key = await s.newKey('exact');
  other = await s.newKey('other');
});
afterAll(() => s.stop());

describe('1. trigger publish: a caller cannot set the settlement fee', () => {
  const publish = (obligation?: Record<string, unknown>) =>
    post('/signal/trigger/publish', {
      template_id: 'ai_model_change',
      threshold: { metric: 'drift', operator: 'gte', value: '1' },
      enabled_exposure_usd: '5000000.00',
      ...(obligation ? { obligation } : {}),
    });

  it('refuses fee_bps 0, null and a higher value with 422 naming obligation.fee_bps, charging nothing', async () => {
    const before = (await meter(key.id)).length;
    for (const fee_bps of [0, null, 26, 10000]) {
      const r = await publish({ fee_bps });
      expect(r.status, String(fee_bps)).toBe(422);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      const b = await r.json();
      expect(b).toMatchObject({ code: 'fee_bps_fixed', fee_bps: 25 });
      expect(b.errors[0].field).toBe('obligation.fee_bps');
    }
    expect((await meter(key.id)).length).toBe(before);
  });

  it('accepts the template fee restated (or omitted) and a fire charges it: 25 bps of 5,000,000.00 = 12,500.00', async () => {
    const r = await publish({ fee_bps: 25 });
    expect(r.status).toBe(201);
    const t = await r.json();
    expect(t.obligation_surface.fee_bps).toBe(25);
    const f = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '2' })).json();
    expect(f.fire.fee).toMatchObject({ bps: 25, source: 'obligation', amount_usd: '12500.00' });
    expect((await meter(key.id)).slice(-2)).toEqual([
      { sku: 'bps_fire', micros: 1_000_000, ref: f.receipt_id },
      { sku: 'bps_fee', micros: 12_500_000_000, ref: f.receipt_id },
    ]);
  });

  it('the fire charges the template fee even for a trigger stored with a lowered one (published before the fix)', async () => {
    const t = await (await publish()).json();
    await s.ctx.ledger.write(async (tx) => {
      const stored = JSON.parse(
        String((await tx.execute({ sql: 'SELECT obligation FROM triggers WHERE id = ?', args: [t.trigger_id] })).rows[0]!.obligation),
      );
      await tx.execute({
        sql: 'UPDATE triggers SET obligation = ? WHERE id = ?',
        args: [JSON.stringify({ ...stored, fee_bps: 0 }), t.trigger_id],
      });
    });
    const f = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '2' })).json();
    expect(f.fire.fee).toMatchObject({ bps: 25, amount_usd: '12500.00' });
  });
});

describe('2. every charge has a receipt; the clearing attestation covers every charge', () => {
  it('an RR-1 challenge charge is receipted, and /v1/me and the sealed attestations agree to the cent', async () => {
    const k = await s.newKey('rr1');
    const fuse = (await (await post('/v1/fuses', { state: 'LIVE' }, k.secret)).json()).fuse_id;
    await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '1000.00' }, k.secret);
    const c = await s.fetch('/api/v1/require-receipt/demo/pay', { method: 'POST', json: {}, key: k.secret });
    expect(c.status).toBe(428);
    const rows = await meter(k.id);
    const challenge = rows.find((r) => r.sku === 'rr1_challenge')!;
    expect(challenge.micros).toBe(20_000);
    const rcpt = await s.fetch(`/v1/receipts/${challenge.ref}`, { headers: { accept: 'application/json' } });
    expect(rcpt.status).toBe(200);
    // Every charge of every key names a receipt that exists.
    // (A charge is stated by its receipt: none exists without one.)
    const { attestation } = await sealNow(s.ctx.ledger);
    // All attestations together cover all charges: their totals add up to the meter's.
    const all = (await chargesOf(s.ctx.ledger.read)).reduce((a, c) => a + BigInt(c.amount_micros), 0n);
    const leaves = await (await s.fetch('/api/v1/logs/clearing/entries?start=0&limit=1000')).json();
    const sealed = leaves.entries.reduce((a: bigint, e: { value: { total_usd: string } }) => a + usd(e.value.total_usd), 0n);
    expect(sealed).toBe(all);
    expect(attestation.per_sku.map((x) => x.sku)).toContain('rr1_challenge');
    const me = await (await s.fetch('/v1/me', { key: k.secret })).json();
    expect(me.usage.total_usd).toBe('0.12');
  });
});

describe('3. graduated tiers never charge less for more', () => {
  it('is monotonic across every tier edge and between random exposures (property)', () => {
    const edges = [0n, 1n, 10_000n, usd('10000000.00'), usd('100000000.00')];
    const points: bigint[] = [];
    for (const e of edges) for (const d of [-20_000n, -10_000n, 0n, 10_000n, 20_000n]) if (e + d >= 0n) points.push(e + d);
    for (let i = 0; i < 500; i++) points.push(BigInt(Math.floor(Math.random() * 2e8)) * 10_000n);
    points.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    for (let i = 1; i < points.length; i++)
      expect(graduatedFeeMicros(TIERS, points[i]!) >= graduatedFeeMicros(TIERS, points[i - 1]!)).toBe(true);
    // Hand-computed: the starter band is 10,000,000 x 2 bps = 2,000.00.
    expect(graduatedFeeMicros(TIERS, usd('10000000.00'))).toBe(usd('2000.00'));
    expect(graduatedFeeMicros(TIERS, usd('10000000.01'))).toBe(usd('2000.00'));
    expect(graduatedFeeMicros(TIERS, usd('10000100.00'))).toBe(usd('2000.01'));
    // 2,000 + 90,000,000 x 1 bps (9,000) + 100,000,000 x 0.5 bps (5,000)
    expect(graduatedFeeMicros(TIERS, usd('200000000.00'))).toBe(usd('16000.00'));
    // Marginal fees of a month's acts add up to the month's fee.
    let month = 0n;
    let sum = 0n;
    for (const step of ['9999999.99', '0.02', '45000000.00', '55000000.00', '1.00']) {
      sum += marginalFeeMicros(TIERS, month, usd(step));
      month += usd(step);
    }
    expect(sum).toBe(graduatedFeeMicros(TIERS, month));
    // A null fee_bps falls back to the Clear tiers, graduated on the month.
    expect(fireFee(usd('2.00'), null, TIERS, usd('9999999.00'))).toMatchObject({
      source: 'clear_tier',
      tier: 'growth',
      feeMicros: usd('0.00'),
    });
  });

  it('/api/v1/clear/exposure: 10,000,000.00 and 10,000,000.01 cleared both owe 2000.00, printed with two decimals', async () => {
    const k = await s.newKey('tiers');
    const fuse = (await (await post('/v1/fuses', { state: 'LIVE' }, k.secret)).json()).fuse_id;
    await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '10000000.00' }, k.secret);
    const a = await (await s.fetch('/api/v1/clear/exposure', { key: k.secret })).json();
    expect(a).toMatchObject({ cleared_exposure_usd: '10000000.00', bps_fee_usd: '2000.00', tier: { id: 'starter' } });
    await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '0.01' }, k.secret);
    const b = await (await s.fetch('/api/v1/clear/exposure', { key: k.secret })).json();
    expect(b).toMatchObject({ cleared_exposure_usd: '10000000.01', bps_fee_usd: '2000.00', tier: { id: 'growth' } });
    for (const v of [b.cleared_exposure_usd, b.bps_fee_usd, b.next_tier.above_usd]) expect(v).toMatch(TWO_DECIMALS);
  });

  it('refuses money with more than two decimals as bad input', async () => {
    const fuse = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
    const r = await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '1.001' });
    expect(r.status).toBe(400);
    expect((await r.json()).errors[0].field).toBe('exposure_usd');
  });
});

describe('7. RTP gate: one payment order, once, for the key the receipt was issued to', () => {
  const RTP = {
    amount: '125.00',
    currency: 'USD',
    account_number: '000123456789',
    routing_number: '021000021',
    counterparty: 'ACME Supplies LLC',
  };
  const go = async () => (await (await post('/v1/prefinality/evaluate', { rail: 'rtp', transfer: RTP })).json()).receipt_jwt as string;
  const gate = (receipt: string, k = key.secret, headers: Record<string, string> = {}) =>
    s.fetch('/v1/prefinality/rtp/gate', { method: 'POST', key: k, json: { receipt, payment_order: RTP }, headers });

  it('passes once; the same order again (no order_id) is refused receipt_used', async () => {
    const t = await go();
    expect((await gate(t)).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const r = await gate(t);
      expect(r.status).toBe(403);
      expect((await r.json()).reasons.map((x: { code: string }) => x.code)).toEqual(['receipt_used']);
    }
  });

  it('refuses another key presenting the receipt, and leaves it usable by its own key', async () => {
    const t = await go();
    const r = await gate(t, other.secret);
    expect(r.status).toBe(403);
    expect((await r.json()).reasons.map((x: { code: string }) => x.code)).toEqual(['wrong_key']);
    expect((await gate(t)).status).toBe(200);
  });

  it('an Idempotency-Key retry of the passing call gets the first answer, not a refusal', async () => {
    const t = await go();
    const h = { 'idempotency-key': 'rtp-once-1' };
    const first = await (await gate(t, key.secret, h)).json();
    const retry = await gate(t, key.secret, h);
    expect(retry.status).toBe(200);
    expect((await retry.json()).receipt_id).toBe(first.receipt_id);
  });
});

describe('8. PAS-A refusals are non-2xx; bound jobs get no ticket; UNSIGNED is one rule', () => {
  const WRITE = { op: 'bind', policy: 'P-9', premium: '100.00' };
  let fuse: string;
  beforeAll(async () => {
    fuse = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
  });

  it('a DEAD fuse is HOLD 409 with its decision body, never 202', async () => {
    const dead = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
    await post(`/v1/fuses/${dead}/dead`, undefined);
    await post('/v1/pas/licenses/lic_h1/charge', undefined);
    const r = await post('/v1/pas/pas-a/pre-bind', { fuse_id: dead, license_id: 'lic_h1', job_id: 'job_dead', write: WRITE });
    expect(r.status).toBe(409);
    expect(r.headers.get('content-type')).toContain('application/json');
    expect(await r.json()).toMatchObject({ decision: 'HOLD', next_step: 'manual_underwriting' });
  });

  it('a job already bound gets BLOCK 403: no ticket, no execute_gate charge, the parent not kept ARMED', async () => {
    await post('/v1/pas/licenses/lic_h2/charge', undefined);
    const t = (await (await post('/v1/pas/pas-a/pre-bind', { fuse_id: fuse, license_id: 'lic_h2', job_id: 'job_b', write: WRITE })).json())
      .ticket;
    const red = await post('/v1/pas/bind-ticket/redeem', { ticket_id: t.ticket_id, write: WRITE, now: new Date().toISOString() });
    expect(red.status).toBe(200);
    const before = await meter(key.id);
    const r = await post('/v1/pas/pas-a/pre-bind', { fuse_id: fuse, license_id: 'lic_h2', job_id: 'job_b', write: WRITE });
    expect(r.status).toBe(403);
    const b = await r.json();
    expect(b).toMatchObject({ decision: 'BLOCK', code: 'already_bound' });
    expect(b.ticket).toBeUndefined();
    const after = await meter(key.id);
    expect(after.slice(before.length).map((x) => x.sku)).toEqual(['hold']);
    const snap = await (await s.fetch('/v1/pas/licenses/lic_h2', { key: key.secret })).json();
    expect(snap).toMatchObject({ state: 'LIVE', children: { issued: 1, outstanding: 0, redeemed: 1 } });
  });

  it('a ticket whose job another ticket bound does not keep the parent ARMED', async () => {
    await post('/v1/pas/licenses/lic_h3/charge', undefined);
    const pre = (job: string) => post('/v1/pas/pas-a/pre-bind', { fuse_id: fuse, license_id: 'lic_h3', job_id: job, write: WRITE });
    const t1 = (await (await pre('job_c')).json()).ticket;
    const t2 = (await (await pre('job_c')).json()).ticket;
    expect((await s.fetch('/v1/pas/licenses/lic_h3', { key: key.secret }).then((r) => r.json())).state).toBe('ARMED');
    await post('/v1/pas/bind-ticket/redeem', { ticket_id: t1.ticket_id, write: WRITE, now: new Date().toISOString() });
    const snap = await (await s.fetch('/v1/pas/licenses/lic_h3', { key: key.secret })).json();
    expect(snap).toMatchObject({ state: 'LIVE', children: { outstanding: 0, superseded: 1 } });
    expect(t2.ticket_id).not.toBe(t1.ticket_id);
  });

  it('an UNSIGNED fuse: the hop refuses it and evaluate answers NO_GO, not GO', async () => {
    const unsigned = (await (await post('/v1/fuses', { state: 'UNSIGNED' })).json()).fuse_id;
    const hop = await (await post('/v1/fuse/hop', { fuse_id: unsigned })).json();
    expect(hop).toMatchObject({ ok: false, verdict: false });
    const RTP = { amount: '5.00', currency: 'USD', account_number: '1', routing_number: '2', counterparty: 'c' };
    const r = await post('/v1/prefinality/evaluate', { rail: 'rtp', transfer: RTP, context: { fuse_id: unsigned } });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ decision: 'NO_GO', rule: { id: 'fuse_unsigned' } });
  });
});

describe('6. one charge object, one iat format', () => {
  const SHAPE = ['amount_usd', 'nap', 'sku'];
  const shapeOf = (c: Record<string, unknown>) => {
    expect(Object.keys(c).sort()).toEqual(SHAPE);
    expect(c.amount_usd).toMatch(TWO_DECIMALS);
    expect(typeof c.nap).toBe('boolean');
  };

  it('every charging answer shows {sku, amount_usd, nap}', async () => {
    const RTP = { amount: '9.00', currency: 'USD', account_number: '1', routing_number: '2', counterparty: 'c' };
    const ev = await (await post('/v1/prefinality/evaluate', { rail: 'rtp', transfer: RTP })).json();
    shapeOf(ev.charge);
    const g = await (await post('/v1/prefinality/rtp/gate', { receipt: ev.receipt_jwt, payment_order: RTP })).json();
    shapeOf(g.charge);
    const t = await (
      await post('/signal/trigger/publish', { template_id: 'incident_sealed', threshold: { metric: 'm', operator: 'gte', value: '1' } })
    ).json();
    shapeOf(t.charge);
    const f = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '1' })).json();
    for (const c of f.charges) shapeOf(c);
    const a = await (await post('/api/v1/astl/publish', { entity: 'agent:exact', preset: 'agentic' })).json();
    shapeOf(a.charge);
  });

  it('OpenAPI documents every charge with the same schema', async () => {
    const doc = await (await s.fetch('/openapi.json')).json();
    const found: string[] = [];
    const walk = (v: unknown) => {
      if (!v || typeof v !== 'object') return;
      const o = v as Record<string, unknown>;
      const props = o.properties as Record<string, unknown> | undefined;
      if (props?.charge) found.push(JSON.stringify(props.charge));
      for (const x of Object.values(o)) walk(x);
    };
    walk(doc.paths);
    expect(found.length).toBeGreaterThan(5);
    // A nullable charge (a demo answers null) is the same schema or null.
    const unwrap = (j: string) => {
      const v = JSON.parse(j) as { anyOf?: Array<Record<string, unknown>> };
      return JSON.stringify(v.anyOf ? v.anyOf.find((x) => x.type !== 'null') : v);
    };
    const distinct = [...new Set(found.map(unwrap))];
    expect(distinct).toHaveLength(1);
    expect(JSON.parse(distinct[0]!).required.sort()).toEqual(SHAPE);
  });

  it('iat is an RFC 7519 NumericDate in the receipt and in the pre-finality JWT', async () => {
    const RTP = { amount: '9.00', currency: 'USD', account_number: '1', routing_number: '2', counterparty: 'c' };
    const before = Math.floor(Date.now() / 1000);
    const ev = await (await post('/v1/prefinality/evaluate', { rail: 'rtp', transfer: RTP })).json();
    const after = Math.floor(Date.now() / 1000);
    const jwt = JSON.parse(Buffer.from(ev.receipt_jwt.split('.')[1], 'base64url').toString());
    const stored = await (await s.fetch(`/v1/receipts/${ev.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    // A batch-sealed receipt's signed content is its log leaf: the canonical JSON of its payload.
    expect(stored.receipt).toBeNull();
    const jws = JSON.parse(stored.leaf);
    for (const iat of [jwt.iat, jws.iat]) {
      expect(Number.isInteger(iat)).toBe(true);
      // Seconds, issued while the request ran.
      expect(iat).toBeGreaterThanOrEqual(before);
      expect(iat).toBeLessThanOrEqual(after);
    }
    expect(Math.floor(Date.parse(jws.issued_at) / 1000)).toBe(jws.iat);
  });
});

describe('4. the operator formula: floor, 10 bps, 0.10 per hop; GO counts as cleared exposure', () => {
  let o: TestServer;
  let k: { id: string; secret: string };
  const RTP = { amount: '125.00', currency: 'USD', account_number: '1', routing_number: '2', counterparty: 'c' };
  beforeAll(async () => {
    o = await startTestServer({ OPERATOR_FLOOR_USD: '25.00' });
    k = await o.newKey('operator');
  });
  afterAll(() => o.stop());

  it('a GO clears its USD amount: /api/v1/clear/exposure counts it', async () => {
    expect((await o.fetch('/v1/prefinality/evaluate', { key: k.secret, json: { rail: 'rtp', transfer: RTP } })).status).toBe(200);
    expect(
      (await o.fetch('/v1/prefinality/evaluate', { key: k.secret, json: { rail: 'rtp', transfer: { ...RTP, currency: 'EUR' } } })).status,
    ).toBe(200);
    const e = await (await o.fetch('/api/v1/clear/exposure', { key: k.secret })).json();
    expect(e).toMatchObject({ cleared_exposure_usd: '125.00', by_decision: { GO: 1 } });
  });

  it('/v1/me shows the open month: OPERATOR_FLOOR_USD, hops, the three terms and what checkout would charge', async () => {
    const fuse = (await (await o.fetch('/v1/fuses', { key: k.secret, json: { state: 'LIVE' } })).json()).fuse_id;
    for (let i = 0; i < 3; i++) await o.fetch('/v1/fuse/hop', { key: k.secret, json: { fuse_id: fuse } });
    const me = await (await o.fetch('/v1/me', { key: k.secret })).json();
    // Charged so far: 2 GO x 0.10 + 3 hops x 0.10 = 0.50; exposure 125.00 -> 10 bps = 0.13 (0.125 half up).
    expect(me.operator_checkout).toMatchObject({
      state: 'open',
      floor_usd: '25.00',
      bps: 10,
      per_hop_usd: '0.10',
      hops: 3,
      cleared_exposure_usd: '125.00',
      terms: { floor_usd: '25.00', bps_usd: '0.13', per_hop_usd: '0.30' },
      basis: 'floor',
      due_usd: '25.00',
      charged_usd: '0.50',
      checkout_usd: '24.50',
    });
  });

  it('checks out a closed month once (one production write), charging the rest of the greatest term', async () => {
    const month = '2026-01';
    await o.ctx.ledger.write(async (tx) => {
      await tx.execute({ sql: 'INSERT INTO hop_counters (key_id, day, hops) VALUES (?, ?, 400)', args: [k.id, `${month}-15`] });
      await tx.execute({
        sql: "INSERT INTO clear_counters (month, key_id, decision, acts, usd, micros) VALUES (?, ?, 'PERMIT', 1, 30000, 0)",
        args: [month, k.id],
      });
      await tx.execute({
        sql: "INSERT INTO usage_counters (key_id, day, sku, nap, count, usd, micros) VALUES (?, '2026-01-15', 'execute_gate', 0, 400, 40, 0)",
        args: [k.id],
      });
    });
    const r = await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month } });
    expect(r.status).toBe(201);
    const c = await r.json();
    // floor 25.00; 10 bps of 30,000.00 = 30.00; 400 hops x 0.10 = 40.00 -> due 40.00, 40.00 already charged -> 0.00
    expect(c).toMatchObject({
      month,
      terms: { floor_usd: '25.00', bps_usd: '30.00', per_hop_usd: '40.00' },
      basis: 'per_hop',
      due_usd: '40.00',
      charged_usd: '40.00',
      checkout_usd: '0.00',
      charge: { sku: 'operator_checkout', amount_usd: '0.00', nap: false },
    });
    const again = await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month } });
    expect(again.status).toBe(200);
    expect((await again.json()).receipt_id).toBe(c.receipt_id);
    expect((await chargesOf(o.ctx.ledger.read, k.id)).filter((c) => c.sku === 'operator_checkout')).toHaveLength(1);
    const open = await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month: new Date().toISOString().slice(0, 7) } });
    expect(open.status).toBe(409);
    expect((await open.json()).code).toBe('period_open');
  });
});

describe('5. projections and the complete price list', () => {
  it('the foundry projection includes the bps fee of the rehearsed settlement', async () => {
    const READINGS = [
      { source_id: 'network_a', value: '0.82' },
      { source_id: 'network_b', value: '0.80' },
      { source_id: 'sealed_reading', value: '0.81' },
    ];
    for (let i = 0; i < 2; i++) {
      const r = await post('/api/v1/foundry/pipeline/run', {
        tenant_id: 'fee-tenant',
        readings: READINGS,
        template_id: 'ai_model_change',
        threshold: { metric: 'm', operator: 'gte', value: '0.5' },
        exposure_usd: '1000000.00',
      });
      expect(r.status).toBe(200);
    }
    const p = await (await s.fetch('/api/v1/foundry/projection/fee-tenant', { key: key.secret })).json();
    const fee = p.projection.lines.find((l: { line: string }) => l.line.startsWith('settlement x bps_fee'));
    // 25 bps of 1,000,000.00 = 2,500.00 per run, two runs.
    expect(fee).toMatchObject({ units: 2, toll_usd: '2500.00', monthly_usd: '5000.00' });
    const sum = p.projection.lines.reduce((a: bigint, l: { monthly_usd: string }) => a + usd(l.monthly_usd), 0n);
    expect(usd(p.projection.monthly_usd)).toBe(sum);
    expect(sum > usd('5000.00')).toBe(true);
  });

  it("GET /api/v1/pricing lists ORN, absence, RR-1, Signal, issuer-pays and template fees, both PDTR tolls said apart, and this service's floor", async () => {
    const o = await startTestServer({ OPERATOR_FLOOR_USD: '7.5' });
    try {
      const t = await (await o.fetch('/api/v1/pricing')).json();
      const rows = new Map<string, Record<string, unknown>>(
        t.sections.flatMap((sct: { id: string; rows: Array<{ id: string }> }) => sct.rows.map((r) => [`${sct.id}/${r.id}`, r])),
      );
      expect(rows.get('layers/orn_sharp')).toMatchObject({ amount_usd: '1.20' });
      expect(rows.get('layers/orn_ga_declare')).toMatchObject({ amount_usd: '25.00' });
      expect(rows.get('layers/absence_witness')).toMatchObject({ amount_usd: '0.05' });
      expect(rows.get('layers/rr1_challenge')).toMatchObject({ amount_usd: '0.02' });
      expect(rows.get('layers/signal_platform')).toMatchObject({ amount_usd: '125000.00' });
      expect(rows.get('layers/signal_mandate_overage')).toMatchObject({ amount_usd: '3.00' });
      expect(rows.get('layers/issuer_pays_vendor_listing_annual')).toMatchObject({ amount_usd: '4999.00' });
      expect(rows.get('settlement/bind_gate_hold')).toMatchObject({ bps: 50 });
      expect(rows.get('layers/pdtr_catalog_toll')).toMatchObject({ amount_usd: '0.10' });
      expect(String(rows.get('layers/pdtr_catalog_toll')!.note)).toMatch(/pdtr_bind 0\.15/);
      expect(rows.get('layers/pdtr_bind')).toMatchObject({ amount_usd: '0.15', endpoint: 'POST /api/v1/bind-payment' });
      expect(rows.get('operator/floor')).toMatchObject({ amount_usd: '7.50' });
      for (const r of rows.values()) if (r.amount_usd !== undefined) expect(r.amount_usd).toMatch(TWO_DECIMALS);
    } finally {
      await o.stop();
    }
  });

  it('the pricing page renders the same list; the PDTR page says which toll is which', async () => {
    const page = await (await s.fetch('/pricing')).text();
    for (const id of [
      'orn_sharp',
      'absence_witness',
      'rr1_challenge',
      'signal_platform',
      'issuer_pays_carrier_data_seat_annual',
      'ai_model_change',
      'pdtr_catalog_toll',
      'operator',
    ])
      expect(page, id).toContain(id);
    expect(page).toContain('125000.00 USD');
    const cat = await (await s.fetch('/api/v1/pdtr/catalog')).json();
    expect(cat).toMatchObject({ toll_usd: 0.1, bind_toll_usd: 0.15 });
    expect(cat.tolls_note).toMatch(/pdtr_bind/);
    const pdtr = await (await s.fetch('/stack/pdtr')).text();
    expect(pdtr).toContain('pdtr_bind');
    expect(pdtr).toMatch(/0\.15 USD/);
    expect(pdtr).toMatch(/0\.10 USD/);
  });
});

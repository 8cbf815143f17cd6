/**
 * Every published price buys something, every charge is shown, the public log
 * tells no secrets (issue 29): the operator checkout's months, the bps fee on
 * cleared exposure billed per month, no silent maximum billable base, the
 * Clear-tier fallback of a fire.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

let s: TestServer;
let key: { id: string; secret: string };
const post = (path: string, json: unknown, k: string = key.secret) => s.fetch(path, { method: 'POST', json, key: k });
const meter = async (keyId: string, server: TestServer = s) =>
  (await chargesOf(server.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, ref: r.ref }));
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

  it("/v1/me shows the open month's accruing fee and the tier its cleared USD reaches", async () => {
    // A GO clears its USD amount (a GO this large is held for review: the row stands for many).
    await o.ctx.ledger.write((tx) =>
      tx.execute({
        sql: "INSERT INTO clear_counters (month, key_id, decision, acts, usd, micros) VALUES (?, ?, 'GO', 1, 12000000, 0)",
        args: [thisMonth(), k.id],
      }),
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
      await tx.execute({
        sql: "INSERT INTO clear_counters (month, key_id, decision, acts, usd, micros) VALUES (?, ?, 'PERMIT', 1, 150000000, 0)",
        args: [month, k.id],
      });
    });
    const before = (await meter(k.id, o)).length;
    const r = await o.fetch('/v1/operator/checkout', { key: k.secret, json: { month } });
    expect(r.status).toBe(201);
    const c = await r.json();
    // 150,000,000 cleared: 2,000.00 + 9,000.00 + 2,500.00 (50,000,000 x 0.5 bps) = 13,500.00, tier network.
    expect(c.clear_bps).toEqual({
      sku: 'clear_bps',
      cleared_exposure_usd: '150000000.00',
      tier: { id: 'network', bps: 0.5 },
      fee_usd: '13500.00',
      graduated: true,
      billed: true,
    });
    // The operator true-up is unchanged by it: 10 bps of 150,000,000 = 150,000.00, nothing charged -> 150,000.00.
    expect(c).toMatchObject({
      due_usd: '150000.00',
      checkout_usd: '150000.00',
      total_usd: '163500.00',
      charge: { sku: 'operator_checkout', amount_usd: '150000.00' },
    });
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
    const fee = await post(
      '/signal/trigger/publish',
      { template_id: 'custom', threshold, obligation: { callable_actions: ['bind_hold'], exposure_ceiling_usd: 20000000, fee_bps: 25 } },
      k2.secret,
    );
    expect(fee.status).toBe(422);
    expect((await fee.json()).code).toBe('fee_bps_fixed');
    const t = await (
      await post(
        '/signal/trigger/publish',
        {
          template_id: 'custom',
          threshold,
          obligation: { callable_actions: ['bind_hold'], exposure_ceiling_usd: 20000000 },
          enabled_exposure_usd: '12000000.00',
        },
        k2.secret,
      )
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
  const lines = async (receiptId: string) =>
    (await meter(key.id)).filter((m) => m.ref === receiptId).map((m) => ({ sku: m.sku, amount_usd: (m.micros / 1e6).toFixed(2) }));
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
    expect(act.charges.map((c: { sku: string; amount_usd: string }) => ({ sku: c.sku, amount_usd: c.amount_usd }))).toEqual(
      await lines(act.receipt_id),
    );
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

describe('6. discovery documents with content', () => {
  it("capture.json is the spend map; with a key, the caller's own spend on it", async () => {
    const anon = await (await s.fetch('/.well-known/capture.json')).json();
    expect(anon.your_spend).toBeNull();
    const ids = anon.spend_map.flatMap((x: { skus: Array<{ id: string }> }) => x.skus.map((k) => k.id));
    expect(ids).toEqual(expect.arrayContaining(['execute_gate', 'hold', 'starter', 'bps_fire']));
    const mine = await (await s.fetch('/.well-known/capture.json', { key: key.secret })).json();
    const me = await (await s.fetch('/v1/me', { key: key.secret })).json();
    expect(mine.your_spend).toMatchObject({ key_id: key.id, total_usd: me.usage.total_usd, nap_usd: me.usage.nap_usd });
    expect(mine.your_spend.by_sku).toEqual(me.usage.tolls);
  });

  it('restraint.json counts production refusals per kind, live, naming no one', async () => {
    const k = await s.newKey('refuser');
    const before = await (await s.fetch('/.well-known/restraint.json')).json();
    expect(before.refusals.map((r: { sku: string }) => r.sku)).toEqual(['ccr', 'hold', 'restraint', 'restraint_call', 'spoliation_seal']);
    const hold = before.refusals.find((r: { sku: string }) => r.sku === 'hold').count;
    expect(hold).toBeGreaterThan(0); // the refused hop and BLOCK above
    expect(JSON.stringify(before)).not.toContain(key.id);
    expect(JSON.stringify(before)).not.toContain(k.id);
  });

  it('listings.json lists every catalog and register.json every log and signing key', async () => {
    const l = await (await s.fetch('/.well-known/listings.json')).json();
    expect(l.listings).toContainEqual({
      id: 'clear',
      schema: 'svc-clear-catalog-v1',
      url: `${s.config.SITE_URL.replace(/\/+$/, '')}/api/v1/clear/catalog`,
    });
    expect(l.listings.length).toBeGreaterThan(10);
    const r = await (await s.fetch('/.well-known/register.json')).json();
    const logs = await (await s.fetch('/api/v1/logs')).json();
    expect(r.logs.map((x: { name: string }) => x.name)).toEqual(logs.logs.map((x: { name: string }) => x.name));
    expect(r.logs.find((x: { name: string }) => x.name === 'receipts')).toMatchObject({
      verifier_key: expect.any(String),
      checkpoint_url: expect.stringContaining('/api/v1/logs/receipts/checkpoint'),
    });
    const pk = await (await s.fetch('/crypto/public-key')).json();
    expect(r.signing_keys).toContainEqual(expect.objectContaining({ kid: pk.kid, current: true }));
  });

  it('the four manifesto documents state claims, each with something to check', async () => {
    for (const name of ['bound-answer', 'exclusive-timing', 'floor', 'particular']) {
      const d = await (await s.fetch(`/.well-known/${name}.json`)).json();
      expect(d.summary, name).not.toBe('Manifesto document.');
      expect(d.rules.length, name).toBeGreaterThanOrEqual(3);
      expect(Object.keys(d.links).length, name).toBeGreaterThanOrEqual(2);
    }
  });
});

describe('7. the public log holds commitments, not caller free text', () => {
  const publicEntry = async (receiptId: string) => {
    const r = await (await s.fetch(`/v1/receipts/${receiptId}`, { headers: { accept: 'application/json' } })).json();
    const entries = await (await s.fetch(`/api/v1/logs/receipts/entries?start=${r.log_index ?? 0}&limit=1000`)).json();
    const e = entries.entries.find((x: { payload?: { receipt_id?: string } }) => x.payload?.receipt_id === receiptId);
    expect(e, receiptId).toBeDefined();
    return { entry: e, leafText: Buffer.from(e.leaf, 'base64').toString('utf8'), stored: JSON.stringify(r) };
  };
  /** The third party's check, written from docs/public-log.md (not the code under test). */
  const opens = (commitment: string, value: unknown, salt: string) =>
    'c1:sha256:' + createHash('sha256').update(Buffer.from(salt, 'base64url')).update(JSON.stringify(value), 'utf8').digest('base64url') ===
    commitment;

  const SECRETS = { subject_ref: 'req-118/cand-Jane-Doe', reason: 'adverse-action review pending: Jane Doe, age 57' };

  it('a hiring restraint: subject_ref and reason are commitments in the public entry; the owner opens them for a third party', async () => {
    const r = await post('/api/v1/restraint', { ...SECRETS, act_kind: 'reject_candidate', decision: 'HOLD' });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b.subject_ref).toBe(SECRETS.subject_ref); // the caller's own answer keeps its text
    const { entry, leafText, stored } = await publicEntry(b.receipt_id);
    for (const text of [SECRETS.subject_ref, 'Jane', 'adverse-action']) {
      expect(leafText).not.toContain(text);
      expect(JSON.stringify(entry)).not.toContain(text);
      expect(stored).not.toContain(text);
    }
    const data = entry.payload.data;
    expect(data.subject_ref).toMatch(/^c1:sha256:[A-Za-z0-9_-]{43}$/);
    expect(data.reason).toMatch(/^c1:sha256:/);
    expect(entry.payload.subject).toMatch(/^c1:sha256:/);
    expect(data.act_kind).toBe('reject_candidate');
    const o = await (await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: key.secret })).json();
    const byField = Object.fromEntries(o.openings.map((x: { field: string }) => [x.field, x]));
    expect(Object.keys(byField).sort()).toEqual(['data.reason', 'data.subject_ref', 'subject']);
    expect(byField['data.reason'].value).toBe(SECRETS.reason);
    for (const [field, x] of Object.entries(byField) as Array<[string, { value: unknown; salt: string; commitment: string }]>) {
      const at = field
        .split('.')
        .reduce((n: Record<string, unknown>, k) => n[k] as Record<string, unknown>, entry.payload) as unknown as string;
      expect(x.commitment).toBe(at);
      expect(opens(at, x.value, x.salt), field).toBe(true);
      expect(opens(at, 'something else', x.salt)).toBe(false);
    }
    // Another account cannot read them.
    const stranger = await s.newKey('stranger');
    expect((await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: stranger.secret })).status).toBe(404);
  });

  it('ORN parties, evidence file names and partner names are committed too', async () => {
    const ga = await (
      await post('/api/v1/orn/declare', {
        event_ref: 'incident-Acme-Corp',
        loss_usd: '900.00',
        parties: [
          { party_id: 'Acme-Corp-planner', contributed_value_usd: '2000' },
          { party_id: 'Beta-LLC', contributed_value_usd: '1000' },
        ],
      })
    ).json();
    const seal = await (
      await post('/api/v1/spoliation-seal', {
        matter_ref: 'Smith-v-Jones',
        evidence: [{ name: 'jane-doe-medical.pdf', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }],
      })
    ).json();
    const relay = await (await post('/api/v1/relay/enroll', { partner_id: 'p-truth-1', name: 'Secret Brokers Ltd' })).json();
    for (const [id, texts] of [
      [ga.receipt_id, ['Acme', 'Beta-LLC']],
      [seal.receipt_id, ['Smith', 'jane-doe-medical']],
      [relay.receipt_id, ['Secret Brokers']],
    ] as Array<[string, string[]]>) {
      expect(id, JSON.stringify([ga, seal, relay])).toMatch(/^rcpt_/);
      const { leafText } = await publicEntry(id);
      for (const t of texts) expect(leafText, t).not.toContain(t);
      const o = await (await s.fetch(`/v1/receipts/${id}/openings`, { key: key.secret })).json();
      const values = JSON.stringify(o.openings.map((x: { value: unknown }) => x.value));
      for (const t of texts) expect(values).toContain(t);
    }
    const { entry } = await publicEntry(ga.receipt_id);
    // Amounts stay public: the allocations add up to the loss, checkable by anyone.
    expect(entry.payload.data.allocations.map((a: { allocation_usd: string }) => a.allocation_usd)).toEqual(['600.00', '300.00']);
  });
});

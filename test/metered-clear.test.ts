import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactVerify, importJWK } from 'jose';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';
import { getApiKey } from '../src/ledger/api-keys.ts';

async function meterRows(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, nap: r.nap, ref: r.ref }));
}

describe('Clear: execute gate, bind, restraint, exposure, usage, network', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let other: { id: string; secret: string };
  const fuses: Record<string, string> = {};
  const post = (path: string, json: unknown, k = key.secret, headers: Record<string, string> = {}) =>
    s.fetch(path, { method: 'POST', json, key: k, headers });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('agent');
    other = await s.newKey('other');
    for (const name of ['LIVE', 'UNSIGNED', 'DEAD'] as const) {
      const r = await post('/v1/fuses', { state: name === 'UNSIGNED' ? 'UNSIGNED' : 'LIVE', label: name });
      fuses[name] = (await r.json()).fuse_id;
    }
    expect((await post(`/v1/fuses/${fuses.DEAD}/dead`, undefined)).status).toBe(200);
  });
  afterAll(() => s.stop());

  it('PERMIT clears the exposure, charges execute_gate, and seals a receipt a second library verifies', async () => {
    const r = await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' }, exposure_usd: '1250.50' });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({
      decision: 'PERMIT',
      rule: 'cleared',
      vertical: 'agents',
      exposure_usd: '1250.50',
      cleared_exposure_usd: '1250.50',
      charge: { sku: 'execute_gate', amount_usd: '0.10', nap: false },
    });
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const e = await (await s.fetch(new URL(b.verify_url).pathname)).json();
    const { payload } = await compactVerify(e.receipt, await importJWK(pub.jwk, 'EdDSA'));
    const p = JSON.parse(new TextDecoder().decode(payload));
    expect(p).toMatchObject({ kind: 'execute_gate', decision: 'PERMIT', subject: fuses.LIVE, key_id: key.id });
    expect(p.data.facts).toMatchObject({ state: 'LIVE', in_surface: true, exposure_micros: 1_250_500_000 });
    const rows = await meterRows(s, key.id);
    expect(rows.at(-1)).toEqual({ sku: 'execute_gate', micros: 100_000, nap: 0, ref: b.receipt_id });
  });

  it('DENY (dead fuse, outside surface), SILENCE (unsigned) and HOLD are refusals metered as NAP hold, with no cleared exposure', async () => {
    const cases = [
      [{ fuse_id: fuses.DEAD, action: { kind: 'pay' }, exposure_usd: '10.00' }, 'DENY', 'fuse_dead'],
      [{ fuse_id: fuses.LIVE, action: { kind: 'launch_rocket' } }, 'DENY', 'outside_surface'],
      [{ fuse_id: fuses.UNSIGNED, action: { kind: 'pay' } }, 'SILENCE', 'fuse_unsigned'],
      [{ fuse_id: fuses.LIVE, action: { kind: 'wire' }, exposure_usd: '20000.00', hold_above_usd: '10000' }, 'HOLD', 'above_hold'],
      [{ fuse_id: fuses.LIVE, action: { kind: 'wire' }, review_requested: true }, 'HOLD', 'review_requested'],
    ] as const;
    for (const [body, decision, rule] of cases) {
      const before = (await meterRows(s, key.id)).length;
      const r = await post('/api/v1/execute-gate', body);
      expect(r.status, rule).toBe(200);
      const b = await r.json();
      expect(b, rule).toMatchObject({
        decision,
        rule,
        cleared_exposure_usd: '0.00',
        charge: { sku: 'hold', amount_usd: '0.50', nap: true },
      });
      const rows = await meterRows(s, key.id);
      expect(rows.length).toBe(before + 1);
      expect(rows.at(-1)).toMatchObject({ sku: 'hold', micros: 500_000, nap: 1, ref: b.receipt_id });
    }
  });

  it('bind_gate vertical: a policy bind is checked as bind_policy', async () => {
    const r = await post('/api/v1/execute-gate/bind', { fuse_id: fuses.LIVE, bind: { policy_ref: 'POL-1' }, exposure_usd: '2000000' });
    const b = await r.json();
    expect(r.status).toBe(200);
    expect(b).toMatchObject({ decision: 'PERMIT', vertical: 'bind_gate', act_kind: 'bind_policy', cleared_exposure_usd: '2000000.00' });
    const d = await (await post('/api/v1/execute-gate/bind', { fuse_id: fuses.DEAD, bind: { policy_ref: 'POL-2' } })).json();
    expect(d).toMatchObject({ decision: 'DENY', charge: { sku: 'hold' } });
  });

  it('exposure sums PERMITs of this month and names the bps tier; network totals every key', async () => {
    const r = await s.fetch('/api/v1/clear/exposure', { key: key.secret });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b.cleared_exposure_usd).toBe('2001250.50');
    expect(b.tier).toMatchObject({ id: 'starter', bps: 2 });
    // 2 bps of 2 001 250.50 USD = 400.2501 USD, charged in whole cents
    expect(b.bps_fee_usd).toBe('400.25');
    expect(b.next_tier).toEqual({ id: 'growth', above_usd: '10000000.00' });
    expect(b.by_decision).toMatchObject({ PERMIT: 2, DENY: 3, SILENCE: 1, HOLD: 2 });
    // crossing 10M: graduated, 2 bps on the first 10M (2000.00) and 1 bps on the rest (100.12505)
    await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'wire' }, exposure_usd: '9000000' });
    const g = await (await s.fetch('/api/v1/clear/exposure', { key: key.secret })).json();
    expect(g).toMatchObject({ cleared_exposure_usd: '11001250.50', tier: { id: 'growth', bps: 1 }, bps_fee_usd: '2100.13' });
    const empty = await (await s.fetch('/api/v1/clear/exposure?month=2020-01', { key: other.secret })).json();
    expect(empty).toMatchObject({ month: '2020-01', cleared_exposure_usd: '0.00', acts: 0, tier: { id: 'starter' } });
    const n = await (await s.fetch('/api/v1/clear/network')).json();
    expect(n).toMatchObject({ keys: 1, acts: 9, cleared_exposure_usd: '11001250.50', tier: { id: 'growth' } });
    expect(n.nap_share).toBeCloseTo(6 / 9);
  });

  it('restraint is NAP restraint; the legacy alias restraint_call is metered as restraint', async () => {
    for (const sku of ['restraint', 'restraint_call'] as const) {
      const r = await post('/api/v1/restraint', { subject_ref: 'req-1/cand-2', act_kind: 'reject_candidate', reason: 'review', sku });
      expect(r.status).toBe(200);
      const b = await r.json();
      expect(b).toMatchObject({
        sku: 'restraint',
        requested_sku: sku,
        decision: 'HOLD',
        charge: { sku: 'restraint', amount_usd: '0.15', nap: true },
      });
      expect((await meterRows(s, key.id)).at(-1)).toMatchObject({ sku: 'restraint', micros: 150_000, nap: 1, ref: b.receipt_id });
    }
    const u = await (await s.fetch('/api/v1/clear/usage', { key: key.secret })).json();
    const restraint = u.by_sku.find((x: { sku: string }) => x.sku === 'restraint');
    expect(restraint).toEqual({ sku: 'restraint', count: 2, nap: true, amount_usd: '0.30' });
    expect(u.by_sku.some((x: { sku: string }) => x.sku === 'restraint_call')).toBe(false);
    const none = await (await s.fetch('/api/v1/clear/usage', { key: other.secret })).json();
    expect(none).toMatchObject({ by_sku: [], total_usd: '0.00' });
  });

  it('Idempotency-Key: a retry answers the first decision and charges once', async () => {
    const headers = { 'idempotency-key': 'eg-1' };
    const body = { fuse_id: fuses.LIVE, action: { kind: 'pay' }, exposure_usd: '1.00' };
    const a = await (await post('/api/v1/execute-gate', body, key.secret, headers)).json();
    const before = (await meterRows(s, key.id)).length;
    const r = await post('/api/v1/execute-gate', body, key.secret, headers);
    expect(r.headers.get('idempotent-replayed')).toBe('true');
    expect((await r.json()).receipt_id).toBe(a.receipt_id);
    expect((await meterRows(s, key.id)).length).toBe(before);
  });

  it('bad input is 400 naming the field and changes nothing; no key is 401; a foreign fuse is 404', async () => {
    const before = await meterRows(s, key.id);
    const acts = Number((await s.ctx.ledger.read.execute('SELECT COALESCE(SUM(acts), 0) AS n FROM clear_counters')).rows[0]!.n);
    const bad = [
      ['/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' }, exposure_usd: 12.5 }, 'exposure_usd'],
      ['/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'Pay!' } }, 'action.kind'],
      ['/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' }, hold_above_usd: '1e3' }, 'hold_above_usd'],
      ['/api/v1/execute-gate/bind', { fuse_id: fuses.LIVE, bind: {} }, 'bind.policy_ref'],
      ['/api/v1/restraint', { subject_ref: 'x', act_kind: 'hire', reason: 'r', sku: 'restraint_cal' }, 'sku'],
      ['/api/v1/restraint', { subject_ref: 'x', act_kind: 'hire', reason: 'r', decision: 'PERMIT' }, 'decision'],
    ] as const;
    for (const [path, body, field] of bad) {
      const r = await post(path, body);
      expect(r.status, field).toBe(400);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      const p = await r.json();
      expect(p.code).toBe('invalid_body');
      expect(p.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const q = await s.fetch('/api/v1/clear/exposure?month=2026-13', { key: key.secret });
    expect(q.status).toBe(400);
    expect((await q.json()).errors[0].field).toBe('month');
    expect((await s.fetch('/api/v1/execute-gate', { method: 'POST', json: { fuse_id: fuses.LIVE, action: { kind: 'pay' } } })).status).toBe(
      401,
    );
    expect((await s.fetch('/api/v1/clear/usage')).status).toBe(401);
    // Refused under the write lock, where the fuse is read: the caller is charged nothing and spends no hop.
    const otherBefore = { meter: await meterRows(s, other.id), key: await getApiKey(s.ctx.ledger.read, other.id) };
    const foreign = await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' } }, other.secret);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).code).toBe('unknown_fuse');
    expect(await meterRows(s, key.id)).toEqual(before);
    expect(await meterRows(s, other.id)).toEqual(otherBefore.meter);
    expect((await getApiKey(s.ctx.ledger.read, other.id))?.hops_used).toBe(otherBefore.key?.hops_used);
    expect(Number((await s.ctx.ledger.read.execute('SELECT COALESCE(SUM(acts), 0) AS n FROM clear_counters')).rows[0]!.n)).toBe(acts);
  });

  it('the hop limit applies: past it the execute gate is 402 and charges nothing', async () => {
    const small = await s.newKey('small', 1);
    const r1 = await post('/v1/fuses', { state: 'LIVE' }, small.secret);
    const fuse = (await r1.json()).fuse_id;
    expect((await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' } }, small.secret)).status).toBe(200);
    const r = await post('/api/v1/execute-gate', { fuse_id: fuse, action: { kind: 'pay' } }, small.secret);
    expect(r.status).toBe(402);
    expect((await r.json()).code).toBe('hop_limit_exceeded');
    expect(await meterRows(s, small.id)).toHaveLength(1);
  });
});

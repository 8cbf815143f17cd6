/**
 * Every published toll buys something (issue 29 item 5): heartbeat,
 * verify_pull, panic_receipt, matter_spoliation, parametric_run and the three
 * clear_before tiers, each with its exact charge, shown and metered once.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

let s: TestServer;
let key: { id: string; secret: string };
const post = (path: string, json: unknown, k: string = key.secret) => s.fetch(path, { method: 'POST', json, key: k });
const lines = async (ref: string) =>
  (await chargesOf(s.ctx.ledger.read, key.id)).filter((c) => c.ref === ref).map((c) => [c.sku, c.amount_micros]);
const count = async () => (await chargesOf(s.ctx.ledger.read, key.id)).length;
const newFuse = async () => (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id as string;

let upstream: Server;
beforeAll(async () => {
  // A stand-in OpenAI-compatible upstream, for an inference session to seal reasoning against.
  upstream = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text);
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        }),
      );
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  s = await startTestServer({
    DEMO_RATE_LIMIT: '1000',
    INFERENCE_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
  });
  key = await s.newKey('premium');
});
afterAll(async () => {
  await s.stop();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

describe('the tolls that had nothing to buy', () => {
  it('heartbeat 0.10: the fuse state sealed, not a hop', async () => {
    const fuse = await newFuse();
    const before = (await (await s.fetch('/v1/me', { key: key.secret })).json()).usage.hops_used;
    const r = await post('/v1/fuse/heartbeat', { fuse_id: fuse });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({ fuse_id: fuse, state: 'LIVE', alive: true, charge: { sku: 'heartbeat', amount_usd: '0.10', nap: false } });
    expect(await lines(b.receipt_id)).toEqual([['heartbeat', 100_000]]);
    expect((await (await s.fetch('/v1/me', { key: key.secret })).json()).usage.hops_used).toBe(before);
    const logSize = async () => ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { tree_size: number }).tree_size;
    const size = await logSize();
    expect((await post('/v1/fuse/heartbeat', { fuse_id: 'fuse_nope' })).status).toBe(404);
    expect(await logSize()).toBe(size);
  });

  it('verify_pull 0.05: the evidence of a receipt, with a receipt of the pull', async () => {
    const fuse = await newFuse();
    const hop = await (await post('/v1/fuse/hop', { fuse_id: fuse })).json();
    const b = await (await post('/v1/receipts/verify-pull', { receipt_id: hop.receipt_id })).json();
    expect(b.pulled).toBe(hop.receipt_id);
    expect(b.evidence).toMatchObject({ receipt_id: hop.receipt_id });
    expect(b.charge).toEqual({ sku: 'verify_pull', amount_usd: '0.05', nap: false });
    expect(await lines(b.receipt_id)).toEqual([['verify_pull', 50_000]]);
    const n = await count();
    expect((await post('/v1/receipts/verify-pull', { receipt_id: 'rcpt_nope' })).status).toBe(404);
    expect(await count()).toBe(n);
  });

  it('panic_receipt 49.00: the fuse is DEAD at once with a signed receipt; a second panic is 409 and free', async () => {
    const fuse = await newFuse();
    const r = await post(`/v1/fuses/${fuse}/panic`, { reason: 'looping wires to Acme' });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({
      fuse_id: fuse,
      state: 'DEAD',
      previous_state: 'LIVE',
      charge: { sku: 'panic_receipt', amount_usd: '49.00' },
    });
    expect(b.receipt.split('.')).toHaveLength(3);
    const payload = JSON.parse(Buffer.from(b.receipt.split('.')[1], 'base64url').toString());
    expect(payload.data.reason).toMatch(/^c1:sha256:/);
    expect(await lines(b.receipt_id)).toEqual([['panic_receipt', 49_000_000]]);
    const hop = await (await post('/v1/fuse/hop', { fuse_id: fuse })).json();
    expect(hop.decision).not.toBe('PERMIT');
    const n = await count();
    const again = await post(`/v1/fuses/${fuse}/panic`, {});
    expect(again.status).toBe(409);
    expect(await count()).toBe(n);
  });

  it("matter_spoliation 500.00: one signed root over the matter's seals", async () => {
    const ev = (c: string) => ({ name: `${c}.pdf`, sha256: c.repeat(64).slice(0, 64) });
    const s1 = await (await post('/api/v1/spoliation-seal', { matter_ref: 'matter-1', evidence: [ev('a'), ev('b')] })).json();
    const s2 = await (await post('/api/v1/spoliation-seal', { matter_ref: 'matter-1', evidence: [ev('c')] })).json();
    expect(s1.root_hash && s2.root_hash).toBeTruthy();
    const r = await post('/api/v1/spoliation-seal/matter', { matter_ref: 'matter-1' });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({ seals: 2, evidence_count: 3, charge: { sku: 'matter_spoliation', amount_usd: '500.00' } });
    // The root, recomputed here from the two seal roots (RFC 9162, two leaves).
    const { createHash } = await import('node:crypto');
    const leaf = (hex: string) =>
      createHash('sha256')
        .update(Buffer.concat([Buffer.from([0]), Buffer.from(hex, 'hex')]))
        .digest();
    const root = createHash('sha256')
      .update(Buffer.concat([Buffer.from([1]), leaf(s1.root_hash), leaf(s2.root_hash)]))
      .digest('hex');
    expect(b.matter_root).toBe(root);
    expect(await lines(b.receipt_id)).toEqual([['matter_spoliation', 500_000_000]]);
    const n = await count();
    expect((await post('/api/v1/spoliation-seal/matter', { matter_ref: 'no-such-matter' })).status).toBe(404);
    expect(await count()).toBe(n);
  });

  it('parametric_run 2.00: only on a FIRED trigger whose obligation can call parametric_window', async () => {
    const t = await (
      await post('/signal/trigger/publish', {
        template_id: 'incident_sealed',
        threshold: { metric: 'x', operator: 'gte', value: '1' },
        enabled_exposure_usd: '1000.00',
      })
    ).json();
    const n = await count();
    const early = await post('/api/v1/foundry/parametric/run', { trigger_id: t.trigger_id });
    expect(early.status).toBe(409);
    expect(await count()).toBe(n);
    const fired = await (await post('/api/v1/foundry/trigger/fire', { trigger_id: t.trigger_id, reading: '2' })).json();
    const b = await (await post('/api/v1/foundry/parametric/run', { trigger_id: t.trigger_id })).json();
    expect(b).toMatchObject({
      action: 'parametric_window',
      released_exposure_usd: '1000.00',
      fire_receipt_id: fired.receipt_id,
      reading: '2',
      charge: { sku: 'parametric_run', amount_usd: '2.00' },
    });
    expect(await lines(b.receipt_id)).toEqual([['parametric_run', 2_000_000]]);
    const other = await (
      await post('/signal/trigger/publish', { template_id: 'ai_model_change', threshold: { metric: 'x', operator: 'gte', value: '1' } })
    ).json();
    expect((await post('/api/v1/foundry/parametric/run', { trigger_id: other.trigger_id })).status).toBe(422);
  });

  it('clear_before 10 / 50 / 150: a signed pre-clearance charged its tier; a refusal is charged its NAP (hold 0.50) whatever the tier; clearing nothing', async () => {
    const fuse = await newFuse();
    const exposureBefore = (await (await s.fetch('/api/v1/clear/exposure', { key: key.secret })).json()).cleared_exposure_usd;
    for (const [tier, micros] of [
      ['act', 10_000_000],
      ['wire', 50_000_000],
      ['contract', 150_000_000],
    ] as const) {
      const b = await (
        await post('/api/v1/clear/before', { tier, fuse_id: fuse, action: { kind: 'pay' }, exposure_usd: '5000.00' })
      ).json();
      expect(b, tier).toMatchObject({
        tier,
        decision: 'PERMIT',
        charge: { sku: `clear_before_${tier}`, amount_usd: (micros / 1e6).toFixed(2) },
      });
      expect(b.receipt.split('.')).toHaveLength(3);
      expect(await lines(b.receipt_id)).toEqual([[`clear_before_${tier}`, micros]]);
    }
    const dead = await newFuse();
    await post(`/v1/fuses/${dead}/dead`, undefined);
    // SPEC 1, 2.4: BLOCK/HOLD/DENY/SILENCE map to the NAP, not the commodity toll (a DENY of a contract is not 150.00).
    for (const tier of ['act', 'contract'] as const) {
      const denied = await (await post('/api/v1/clear/before', { tier, fuse_id: dead, action: { kind: 'pay' } })).json();
      expect(denied, tier).toMatchObject({ tier, decision: 'DENY', charge: { sku: 'hold', amount_usd: '0.50', nap: true } });
      expect(denied.receipt.split('.')).toHaveLength(3);
      expect(await lines(denied.receipt_id)).toEqual([['hold', 500_000]]);
    }
    const held = await (
      await post('/api/v1/clear/before', {
        tier: 'wire',
        fuse_id: fuse,
        action: { kind: 'pay' },
        exposure_usd: '900.00',
        hold_above_usd: '500.00',
      })
    ).json();
    expect(held).toMatchObject({ decision: 'HOLD', charge: { sku: 'hold', amount_usd: '0.50', nap: true } });
    expect((await (await s.fetch('/api/v1/clear/exposure', { key: key.secret })).json()).cleared_exposure_usd).toBe(exposureBefore);
  });

  it('the price list names where each of them is charged', async () => {
    const p = await (await s.fetch('/api/v1/pricing')).json();
    const rows = p.sections.flatMap((x: { rows: Array<{ id: string; endpoint?: string }> }) => x.rows);
    for (const sku of [
      'heartbeat',
      'verify_pull',
      'panic_receipt',
      'matter_spoliation',
      'parametric_run',
      'clear_before_act',
      'clear_before_wire',
      'clear_before_contract',
    ]) {
      expect(rows.find((r: { id: string }) => r.id === sku)?.endpoint, sku).toBeTruthy();
    }
  });
});

describe('issuer-pays listing and reasoning_seal', () => {
  it('lists a vendor on the index for a year at vendor_listing_annual 4999.00, once', async () => {
    const r = await post('/api/v1/issuer-pays/listings', { vendor: 'acme-audit', name: 'Acme Audit', url: 'https://acme-audit.example' });
    expect(r.status).toBe(201);
    const b = await r.json();
    expect(b).toMatchObject({
      vendor: 'acme-audit',
      grade: null,
      charge: { sku: 'vendor_listing_annual', amount_usd: '4999.00', nap: false },
    });
    expect(Date.parse(b.listed_until) - Date.parse(b.listed_at)).toBe(365 * 86_400_000);
    expect(await lines(b.receipt_id)).toEqual([['vendor_listing_annual', 4_999_000_000]]);
    const index = await (await s.fetch('/api/v1/issuer-pays/listings')).json();
    expect(index.data).toContainEqual(expect.objectContaining({ vendor: 'acme-audit', name: 'Acme Audit', receipt_id: b.receipt_id }));
    const n = await count();
    const again = await post('/api/v1/issuer-pays/listings', { vendor: 'acme-audit', name: 'Acme Audit' });
    expect(again.status).toBe(409);
    expect(await count()).toBe(n);
  });

  it("a vendor the catalog ranks stays the catalog's: its id, or its id as a word of a listing's id or name, is 403 and free", async () => {
    const ranked = (await (await s.fetch('/api/v1/issuer-pays/catalog')).json()).rankings.map((r: { vendor: string }) => r.vendor);
    expect(ranked).toContain('velaru');
    const n = await count();
    for (const [body, field] of [
      [{ vendor: 'velaru', name: 'Velaru (official)' }, 'vendor'],
      [{ vendor: 'velaru-official', name: 'Audit partners' }, 'vendor'],
      [{ vendor: 'acme-assurance', name: 'Velaru (official)' }, 'name'],
      [{ vendor: 'acme-assurance', name: 'VELARU audit' }, 'name'],
    ] as const) {
      const r = await post('/api/v1/issuer-pays/listings', body);
      expect(r.status, JSON.stringify(body)).toBe(403);
      expect(await r.json()).toMatchObject({ code: 'ranked_vendor_reserved', ranked_vendor: 'velaru', errors: [{ field }] });
    }
    expect(await count()).toBe(n);
    const index = await (await s.fetch('/api/v1/issuer-pays/listings')).json();
    expect(
      index.data
        .map((l: { vendor: string; name: string }) => `${l.vendor} ${l.name}`)
        .join(' ')
        .toLowerCase(),
    ).not.toContain('velaru');
    // A name that merely contains the letters is another vendor's.
    expect((await post('/api/v1/issuer-pays/listings', { vendor: 'velarus-audit', name: 'Velarus Audit' })).status).toBe(201);
  });

  it('reasoning_seal: a commitment to the reasoning sealed with the session root, at inference_seal 0.08', async () => {
    const chat = await post('/api/v1/inference/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.status).toBe(200);
    const session = chat.headers.get('fusegate-session')!;
    const root = (await (await s.fetch(`/api/v1/inference/sessions/${session}`, { key: key.secret })).json()).root;
    const reasoning = 'three prior incidents at Acme, so raise the premium';
    const r = await post('/api/v1/inference/reasoning-seal', { session_id: session, reasoning });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({ session_root: root, session_size: 1, charge: { sku: 'inference_seal', amount_usd: '0.08' } });
    expect(await lines(b.receipt_id)).toEqual([['inference_seal', 80_000]]);
    const stored = JSON.stringify(
      await (await s.fetch(`/v1/receipts/${b.receipt_id}`, { headers: { accept: 'application/json' } })).json(),
    );
    expect(stored).not.toContain('Acme');
    expect(stored).toContain(root);
    const o = (await (await s.fetch(`/v1/receipts/${b.receipt_id}/openings`, { key: key.secret })).json()).openings[0];
    expect(o.value).toBe(reasoning);
    expect(
      'c1:sha256:' + createHash('sha256').update(Buffer.from(o.salt, 'base64url')).update(JSON.stringify(reasoning)).digest('base64url'),
    ).toBe(b.reasoning_commitment);
    expect((await post('/api/v1/inference/reasoning-seal', { session_id: 'inf_nope', reasoning_sha256: 'a'.repeat(64) })).status).toBe(404);
  });
});

describe('GAM credits', () => {
  it("a clearing window bought grants its credits; the key's charges after it draw on them", async () => {
    const k = await s.newKey('gam-operator');
    const none = await (await s.fetch('/api/v1/gam/credits/balance', { key: k.secret })).json();
    expect(none.balance).toBeNull();
    const r = await s.fetch('/api/v1/gam/credits/purchase', { method: 'POST', json: { sku: 'clearing_quarterly' }, key: k.secret });
    expect(r.status).toBe(201);
    const g = await r.json();
    expect(g).toMatchObject({
      sku: 'clearing_quarterly',
      gam_credits_usd: '10000.00',
      charge: { sku: 'clearing_quarterly', amount_usd: '2499.00' },
    });
    expect(Date.parse(g.expires_at) - Date.parse(g.granted_at)).toBe(13 * 7 * 86_400_000);
    // Charges after the grant draw on it: a panic (49.00) and a hop (0.10).
    const fuse = (await (await s.fetch('/v1/fuses', { method: 'POST', json: { state: 'LIVE' }, key: k.secret })).json()).fuse_id;
    await s.fetch('/v1/fuse/hop', { method: 'POST', json: { fuse_id: fuse }, key: k.secret });
    await s.fetch(`/v1/fuses/${fuse}/panic`, { method: 'POST', json: {}, key: k.secret });
    const b = (await (await s.fetch('/api/v1/gam/credits/balance', { key: k.secret })).json()).balance;
    expect(b).toMatchObject({
      granted_usd: '10000.00',
      charged_since_usd: '49.10',
      drawn_usd: '49.10',
      remaining_usd: '9950.90',
      beyond_credits_usd: '0.00',
    });
    const again = await s.fetch('/api/v1/gam/credits/purchase', { method: 'POST', json: { sku: 'clearing_annual' }, key: k.secret });
    expect(again.status).toBe(409);
  });
});

describe('Signal: the pattern feed with mandate overage', () => {
  it('the included mandates are free; each one past them is charged mandate_overage 3.00 once; the feed counts the watched metrics', async () => {
    const o = await startTestServer({ SIGNAL_INCLUDED_MANDATES: '2' });
    try {
      const k = await o.newKey('signal');
      const mandate = (metric: string) => o.fetch('/signal/mandates', { method: 'POST', json: { metric }, key: k.secret });
      const a = await (await mandate('drift')).json();
      const b = await (await mandate('holds')).json();
      const r = await mandate('wires');
      expect(r.status).toBe(201);
      const c = await r.json();
      expect([a.overage, b.overage, c.overage]).toEqual([false, false, true]);
      expect(a.charge).toBeNull();
      expect(c.charge).toEqual({ sku: 'mandate_overage', amount_usd: '3.00', nap: false });
      const rows = await chargesOf(o.ctx.ledger.read, k.id);
      expect(rows.map((x) => [x.sku, Number(x.amount_micros), x.ref])).toEqual([['mandate_overage', 3_000_000, c.receipt_id]]);
      await o.fetch('/signal/trigger/publish', {
        method: 'POST',
        json: { template_id: 'ai_model_change', threshold: { metric: 'drift', operator: 'gte', value: '1' } },
        key: k.secret,
      });
      const feed = await (await o.fetch('/signal/patterns.json', { key: k.secret })).json();
      expect(feed).toMatchObject({ mandates: 3, included: 2 });
      expect(feed.patterns).toContainEqual({ metric: 'drift', published: 1, fired: 0 });
    } finally {
      await o.stop();
    }
  });
});

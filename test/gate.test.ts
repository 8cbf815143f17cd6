import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactVerify, importJWK } from 'jose';
import { operatorChargeMicros } from '../src/domain/pricing.ts';
import { classify } from '../src/domain/classify.ts';
import { setKeySurface } from '../src/ledger/api-keys.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { allReceipts, chargesOf } from './support/ledger-reads.ts';

async function meterRows(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, nap: r.nap }));
}

describe('gate core', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  const fuses: Record<string, string> = {};
  const post = (path: string, json: unknown, k = key.secret, headers: Record<string, string> = {}) =>
    s.fetch(path, { method: 'POST', json, key: k, headers });

  beforeAll(async () => {
    // A window of a year: a fixed window that rolled over mid-test would reset the count.
    s = await startTestServer({ DEMO_RATE_LIMIT: '5', DEMO_RATE_WINDOW_SECONDS: '31536000' });
    key = await s.newKey('agent');
    for (const state of ['LIVE', 'UNSIGNED', 'ARMED', 'DEAD'] as const) {
      const r = await post('/v1/fuses', { state: state === 'UNSIGNED' ? 'UNSIGNED' : 'LIVE', label: state });
      expect(r.status).toBe(201);
      const f = await r.json();
      fuses[state] = f.fuse_id;
    }
    expect((await post(`/v1/fuses/${fuses.DEAD}/dead`, undefined)).status).toBe(200);
    // ARMED cannot be reached through the fuse API (it belongs to licence parents); set it directly.
    await s.ctx.ledger.write((tx) => tx.execute({ sql: "UPDATE fuses SET state = 'ARMED' WHERE id = ?", args: [fuses.ARMED!] }));
  });
  afterAll(() => s.stop());

  it('answers every field of SPEC 2.1 for every state, and a DEAD fuse fails closed', async () => {
    const expected = {
      LIVE: { ok: true, verdict: true, decision: 'PERMIT' },
      ARMED: { ok: true, verdict: true, decision: 'PERMIT' },
      UNSIGNED: { ok: false, verdict: false, decision: 'SILENCE' },
      DEAD: { ok: false, verdict: false, decision: 'DENY' },
    };
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const jwk = await importJWK(pub.jwk, 'EdDSA');
    for (const [state, want] of Object.entries(expected)) {
      const r = await post('/v1/fuse/hop', { fuse_id: fuses[state] });
      expect(r.status, state).toBe(200);
      const body = await r.json();
      expect(Object.keys(body)).toEqual(expect.arrayContaining(['fuse_id', 'ok', 'receipt_id', 'state', 'verdict', 'verify_url']));
      expect(body).toMatchObject({ fuse_id: fuses[state], state, ...want });
      const e = await (await s.fetch(new URL(body.verify_url).pathname)).json();
      expect(e.verification).toEqual({ signature: true, inclusion: true });
      // A hop's receipt is batch-sealed: its leaf is its canonical payload, and the seal's JWS
      // (checked here with jose) signs the checkpoint body its inclusion proof is against.
      expect(e.receipt).toBeNull();
      const { payload } = await compactVerify(e.checkpoint_jws, jwk);
      expect(new TextDecoder().decode(payload)).toBe(e.checkpoint.slice(0, e.checkpoint.indexOf('\n\n') + 1));
      expect(Number(e.checkpoint.split('\n')[1])).toBe(e.inclusion.tree_size);
      expect(JSON.parse(e.leaf)).toEqual(e.payload);
      expect(e.payload).toMatchObject({ kind: 'hop', decision: want.decision, subject: fuses[state] });
    }
    const rows = await meterRows(s, key.id);
    expect(rows.filter((r) => r.sku === 'execute_gate')).toHaveLength(2);
    expect(rows.filter((r) => r.sku === 'hold' && r.nap === 1 && r.micros === 500_000)).toHaveLength(2);
    expect(rows.find((r) => r.sku === 'execute_gate')!.micros).toBe(100_000);
  });

  it("looks fuses up (400 without fuse_id), and hides other keys' fuses behind 404", async () => {
    const r = await s.fetch(`/v1/fuse/lookup?fuse_id=${fuses.DEAD}`, { key: key.secret });
    expect(await r.json()).toMatchObject({ fuse_id: fuses.DEAD, state: 'DEAD', exists: true });
    const missing = await s.fetch('/v1/fuse/lookup', { key: key.secret });
    expect(missing.status).toBe(400);
    expect((await missing.json()).errors[0].field).toBe('fuse_id');
    const other = await s.newKey('other');
    for (const path of [`/v1/fuse/lookup?fuse_id=${fuses.LIVE}`, `/v1/ocsp?fuse_id=${fuses.LIVE}`]) {
      const res = await s.fetch(path, { key: other.secret });
      expect(res.status).toBe(404);
      expect((await res.json()).code).toBe('unknown_fuse');
    }
    expect((await post('/v1/fuse/hop', { fuse_id: fuses.LIVE }, other.secret)).status).toBe(404);
    expect((await post(`/v1/fuses/${fuses.LIVE}/dead`, undefined, other.secret)).status).toBe(404);
    expect(await meterRows(s, other.id)).toEqual([]);
  });

  it('blows and charges fuses; charge only resurrects UNSIGNED or DEAD', async () => {
    const created = await (await post('/v1/fuses', { state: 'UNSIGNED' })).json();
    const id = created.fuse_id;
    expect((await (await post(`/v1/fuses/${id}/charge`, undefined)).json()).state).toBe('LIVE');
    const again = await post(`/v1/fuses/${id}/charge`, undefined);
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe('invalid_transition');
    expect(await (await post(`/v1/fuses/${id}/dead`, undefined)).json()).toMatchObject({ state: 'DEAD', previous_state: 'LIVE' });
    expect(await (await post('/v1/fuse/hop', { fuse_id: id })).json()).toMatchObject({ verdict: false, decision: 'DENY' });
    expect((await (await post(`/v1/fuses/${id}/charge`, undefined)).json()).state).toBe('LIVE');
    const list = await (await s.fetch('/v1/fuses', { key: key.secret })).json();
    expect(list.data.map((f: { fuse_id: string }) => f.fuse_id)).toContain(id);
  });

  it('welds the act: closed world, DEAD never acts, accepted acts carry their fingerprint', async () => {
    const ok = await (await post('/v1/act', { fuse_id: fuses.LIVE, action: { kind: 'pay', amount: '10.00', to: 'acme' } })).json();
    expect(ok).toMatchObject({ acted: true, decision: 'PERMIT', act_kind: 'pay' });
    expect(ok.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const sameAct = await (await post('/v1/act', { fuse_id: fuses.LIVE, action: { to: 'acme', amount: '10.00', kind: 'pay' } })).json();
    expect(sameAct.fingerprint).toBe(ok.fingerprint);
    const outside = await (await post('/v1/act', { fuse_id: fuses.LIVE, action: { kind: 'launch_missiles' } })).json();
    expect(outside).toMatchObject({ acted: false, verdict: false, decision: 'BLOCK' });
    expect((await s.fetch(new URL(outside.verify_url).pathname)).status).toBe(200);
    const dead = await (await post('/v1/act', { fuse_id: fuses.DEAD, action: { kind: 'pay' } })).json();
    expect(dead).toMatchObject({ acted: false, decision: 'DENY' });
    // A narrower declared surface refuses what the default allowed.
    const narrow = await s.newKey('narrow');
    await setKeySurface(s.ctx.ledger, narrow.id, ['quote']);
    const f = await (await post('/v1/fuses', {}, narrow.secret)).json();
    expect((await (await post('/v1/act', { fuse_id: f.fuse_id, action: { kind: 'pay' } }, narrow.secret)).json()).decision).toBe('BLOCK');
    expect((await (await post('/v1/act', { fuse_id: f.fuse_id, action: { kind: 'quote' } }, narrow.secret)).json()).acted).toBe(true);
    expect((await meterRows(s, narrow.id)).map((r) => r.sku)).toEqual(['hold', 'execute_gate', 'seal']);
  });

  it('the declared surface in the answer: a BLOCK names the kinds it holds, case is one rule, a declared surface needs a kind', async () => {
    const outside = await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'write' } })).json();
    expect(outside).toMatchObject({ decision: 'BLOCK', verdict: false, reason: 'act kind "write" is outside the declared surface' });
    expect(outside.surface).toEqual(expect.arrayContaining(['pay', 'wire', 'bind_policy']));
    // "Write" is the same act kind as "write": the same BLOCK, not a 400 beside it.
    const upper = await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'Write' } });
    expect(upper.status).toBe(200);
    expect(await upper.json()).toMatchObject({ decision: 'BLOCK', reason: 'act kind "write" is outside the declared surface' });
    expect(await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'PAY' } })).json()).toMatchObject({
      decision: 'PERMIT',
    });
    expect(await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'pay' } })).json()).not.toHaveProperty('surface');
    // A key on the default surface may check its fuse alone; one that declared its surface names the act.
    expect(await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE })).json()).toMatchObject({ decision: 'PERMIT' });
    const declared = await s.newKey('declared');
    await setKeySurface(s.ctx.ledger, declared.id, ['quote']);
    const f = await (await post('/v1/fuses', {}, declared.secret)).json();
    const bare = await (await post('/v1/fuse/hop', { fuse_id: f.fuse_id }, declared.secret)).json();
    expect(bare).toMatchObject({ decision: 'BLOCK', verdict: false, ok: true, surface: ['quote'] });
    expect(bare.reason).toContain('declares its surface');
    expect(await (await post('/v1/fuse/hop', { fuse_id: f.fuse_id, action: { kind: 'Quote' } }, declared.secret)).json()).toMatchObject({
      decision: 'PERMIT',
    });
  });

  it('classifies deterministically with a signed receipt, and demos execute-gate', async () => {
    const r = await (await post('/v1/classify', { text: 'Please wire $40k to the supplier today' })).json();
    expect(r).toMatchObject({ act_kind: 'wire', preset: 'agentic', irreversible: true, rule: 'keyword' });
    expect(r.verify_url).toContain(r.receipt_id);
    expect(classify({ text: 'bind the policy for ACME' })).toMatchObject({ act_kind: 'bind_policy', preset: 'insurance' });
    expect(classify({ text: 'what is the weather' })).toMatchObject({ act_kind: null, rule: 'no_match' });
    expect(classify({ action: { kind: 'schedule_interview' } })).toMatchObject({ preset: 'hiring', irreversible: false });
    expect((await post('/v1/classify', { text: 'x', action: { kind: 'pay' } })).status).toBe(400);
    const permit = await (await post('/v1/execute-gate/demo', { fuse_id: fuses.LIVE, action: { kind: 'pay' } })).json();
    const deny = await (await post('/v1/execute-gate/demo', { fuse_id: fuses.DEAD, action: { kind: 'pay' } })).json();
    expect(permit).toMatchObject({ decision: 'PERMIT' });
    expect(deny).toMatchObject({ decision: 'DENY', reason: expect.stringMatching(/DEAD/) });
  });

  it("names the agent's tool a hop gates in its receipt, in the clear as the act kind, and its refusal alert", async () => {
    const r = await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, action: { kind: 'send_email' }, tool: 'mail.send-v2' })).json();
    const e = await (await s.fetch(new URL(r.verify_url).pathname)).json();
    expect(e.payload).toMatchObject({ kind: 'hop', decision: 'PERMIT', data: { act_kind: 'send_email', tool: 'mail.send-v2' } });
    const none = await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE })).json();
    expect((await (await s.fetch(new URL(none.verify_url).pathname)).json()).payload.data).not.toHaveProperty('tool');
    // Free text is no tool name: refused, never logged.
    const bad = await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, tool: 'send the email to Bob' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).errors).toEqual([expect.objectContaining({ field: 'tool' })]);
    expect(await (await post('/v1/fuse/hop', { fuse_id: fuses.LIVE, tool: 'x'.repeat(129) })).json()).toMatchObject({ status: 400 });
  });

  it('refuses malformed bodies with 400, writing and charging nothing', async () => {
    const before = await meterRows(s, key.id);
    const size = (await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'receipts'")).rows[0]!.size;
    for (const body of [{}, { fuse_id: '' }, { fuse_id: fuses.LIVE, action: { kind: 'Bad Kind' } }, { fuse_id: fuses.LIVE, extra: 1 }]) {
      const r = await post('/v1/fuse/hop', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
    const raw = await s.fetch('/v1/fuse/hop', {
      method: 'POST',
      key: key.secret,
      headers: { 'content-type': 'application/json' },
      body: '{"fuse_id":',
    });
    expect((await raw.json()).code).toBe('malformed_json');
    expect(await meterRows(s, key.id)).toEqual(before);
    expect((await s.ctx.ledger.read.execute("SELECT size FROM logs WHERE name = 'receipts'")).rows[0]!.size).toBe(size);
  });

  it('replays idempotent retries once, 422 on a changed body, 409 while running', async () => {
    const k = await s.newKey('idem');
    const f = await (await post('/v1/fuses', {}, k.secret)).json();
    const h = { 'idempotency-key': 'retry-1' };
    const first = await post('/v1/fuse/hop', { fuse_id: f.fuse_id }, k.secret, h);
    const second = await post('/v1/fuse/hop', { fuse_id: f.fuse_id }, k.secret, h);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(await first.json());
    expect((await meterRows(s, k.id)).filter((r) => r.sku === 'execute_gate')).toHaveLength(1);
    const changed = await post('/v1/fuse/hop', { fuse_id: f.fuse_id, action: { kind: 'pay' } }, k.secret, h);
    expect(changed.status).toBe(422);
    const racing = await Promise.all(
      Array.from({ length: 6 }, () => post('/v1/fuse/hop', { fuse_id: f.fuse_id }, k.secret, { 'idempotency-key': 'race' })),
    );
    const statuses = racing.map((r) => r.status).sort();
    expect(statuses.filter((x) => x === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((x) => x === 200 || x === 409)).toBe(true);
    expect((await meterRows(s, k.id)).filter((r) => r.sku === 'execute_gate')).toHaveLength(2);
    const me = await (await s.fetch('/v1/me', { key: k.secret })).json();
    expect(me.usage.hops_used).toBe(2);
    expect(me.usage.tolls.find((t: { sku: string }) => t.sku === 'execute_gate').amount_usd).toBe('0.20');
  });

  it('answers 402 past the hop limit, with the limit and how to raise it', async () => {
    const k = await s.newKey('small', 2);
    const f = await (await post('/v1/fuses', {}, k.secret)).json();
    expect((await post('/v1/fuse/hop', { fuse_id: f.fuse_id }, k.secret)).status).toBe(200);
    expect((await s.fetch(`/v1/fuse/lookup?fuse_id=${f.fuse_id}`, { key: k.secret })).status).toBe(200);
    const over = await post('/v1/fuse/hop', { fuse_id: f.fuse_id }, k.secret);
    expect(over.status).toBe(402);
    const p = await over.json();
    expect(p).toMatchObject({ code: 'hop_limit_exceeded', hop_limit: 2, x402_configured: false });
    // The 402 says where an operator raises the limit (the dashboard, or the keys API), and names no CLI command.
    expect(p.dashboard_url).toBe('/dashboard/keys');
    expect(p.how_to_raise).toContain('/limit');
    expect(JSON.stringify(p)).not.toMatch(/npm run|keys set-limit/);
    expect((await s.fetch(`/v1/fuse/lookup?fuse_id=${f.fuse_id}`, { key: k.secret })).status).toBe(402);
  });

  it('runs public demos on drill fuses, never charged, and rate limits them with 429', async () => {
    const live = await (await s.fetch('/demo/hop', { json: {} })).json();
    expect(live).toMatchObject({ fuse_id: 'fuse_drill_live', verdict: true });
    const dead = await s.fetch('/demo/act', { json: { fuse_id: 'fuse_drill_dead', action: { kind: 'pay' } } });
    expect(dead.headers.get('ratelimit-policy')).toBe('"demo";q=5;w=31536000');
    expect(await dead.json()).toMatchObject({ acted: false, decision: 'DENY' });
    expect((await s.fetch(`/demo/lookup?fuse_id=${fuses.LIVE}`)).status).toBe(404);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await s.fetch('/demo/lookup')).status);
    // Requests 1-3 above counted too (a 404 is still a request): 4 and 5 pass, 6 on are refused.
    expect(statuses).toEqual([200, 200, 429, 429]);
    const limited = await s.fetch('/demo/lookup');
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await limited.json()).code).toBe('rate_limited');
    // A demo receipt names no key, so it states no charge.
    expect((await allReceipts(s.ctx.ledger.read)).filter((r) => r.payload.demo && r.payload.charges?.length)).toHaveLength(0);
  });

  it('halts OCSP with 503 when the ledger cannot be reached', async () => {
    const t = await startTestServer();
    const k = await t.newKey('ocsp');
    const f = await (await t.fetch('/v1/fuses', { json: {}, key: k.secret })).json();
    expect((await t.fetch(`/v1/ocsp?fuse_id=${f.fuse_id}`, { key: k.secret })).status).toBe(200);
    const secret = k.secret;
    // Authentication reads the key first; keep it cached, then take the ledger away.
    t.ctx.ledger.read.close();
    const r = await t.fetch(`/v1/ocsp?fuse_id=${f.fuse_id}`, { key: secret });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await r.json()).toMatchObject({ status: 503, code: 'halt', halt: true, fuse_id: f.fuse_id });
    await t.stop().catch(() => undefined);
  });
});

describe('operator formula', () => {
  it('is the greater of the floor, 10 bps of exposure and 0.10 per hop', () => {
    const floor = 100_000n;
    expect(operatorChargeMicros({ floorMicros: floor, exposureMicros: 0n, hops: 0 })).toBe(100_000n);
    expect(operatorChargeMicros({ floorMicros: floor, exposureMicros: 1_000_000_000n, hops: 3 })).toBe(1_000_000n); // 10 bps of 1000 USD = 1 USD
    expect(operatorChargeMicros({ floorMicros: floor, exposureMicros: 1_000_000_000n, hops: 25 })).toBe(2_500_000n); // 25 hops = 2.50
    expect(operatorChargeMicros({ floorMicros: 5_000_000n, exposureMicros: 1_000_000_000n, hops: 25 })).toBe(5_000_000n);
  });
});

describe('fuse CLI', () => {
  it('creates, blows and charges fuses that the HTTP gate then sees', async () => {
    const { runCli } = await import('./support/cli.ts');
    const { testEnv } = await import('./support/server.ts');
    const s = await startTestServer();
    try {
      const k = await s.newKey('cli');
      const cli = (...args: string[]) => runCli([...args, '--json'], testEnv(s.dir));
      const created = JSON.parse((await cli('fuses', 'create', '--key', k.id)).stdout);
      expect((await cli('fuses', 'dead', created.fuse_id)).code).toBe(0);
      const hop = await (await s.fetch('/v1/fuse/hop', { json: { fuse_id: created.fuse_id }, key: k.secret })).json();
      expect(hop).toMatchObject({ state: 'DEAD', verdict: false });
      expect((await cli('fuses', 'dead', created.fuse_id)).code).toBe(1);
      expect((await cli('fuses', 'charge', created.fuse_id)).code).toBe(0);
      expect((await cli('keys', 'surface', k.id, '--acts', 'quote')).code).toBe(0);
      const act = await (await s.fetch('/v1/act', { json: { fuse_id: created.fuse_id, action: { kind: 'pay' } }, key: k.secret })).json();
      expect(act).toMatchObject({ state: 'LIVE', decision: 'BLOCK' });
      expect((await cli('fuses', 'create')).code).toBe(2);
    } finally {
      await s.stop();
    }
  }, 120_000); // six Node processes, each loading the CLI: the suite's 30 s is meant for in-process tests
});

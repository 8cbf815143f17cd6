import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, setKeyExpiry, touchKey } from '../src/ledger/api-keys.ts';
import { holdCacheClock, startTestServer, writesSettled, type TestServer } from './support/server.ts';

describe('keys API and lifecycle', () => {
  let s: TestServer;
  let other: TestServer;
  let ops: { id: string; secret: string; accountId: string };
  let stranger: { id: string; secret: string; accountId: string };
  const post = (srv: TestServer, path: string, key: string, json?: unknown) =>
    srv.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

  beforeAll(async () => {
    s = await startTestServer();
    // A second process on the same database: revocation must reach it too.
    other = await startTestServer({}, s.dir);
    ops = await s.newKey('ops');
    stranger = await s.newKey('stranger');
  });
  afterAll(async () => {
    await other.close();
    await s.stop();
  });

  it('creates an agent key by default, shows the secret once and stores only its hash', async () => {
    const r = await post(s, '/v1/keys', ops.secret, { name: 'payments agent' });
    expect(r.status).toBe(201);
    const k = await r.json();
    expect(k).toMatchObject({ object: 'api_key', role: 'agent', account_id: ops.accountId, status: 'active', name: 'payments agent' });
    expect(k.secret).toMatch(/^fg_live_/);
    expect(k.secret.startsWith(k.prefix)).toBe(true);
    const row = (await s.ctx.ledger.read.execute({ sql: 'SELECT * FROM api_keys WHERE id = ?', args: [k.id] })).rows[0]!;
    expect(row.secret_hash).toBe(hashSecret(k.secret));
    expect(Object.values(row)).not.toContain(k.secret);
    const listed = await (await s.fetch('/v1/keys', { key: ops.secret })).json();
    expect(listed.data.map((x: { id: string }) => x.id)).toEqual(expect.arrayContaining([ops.id, k.id]));
    expect(JSON.stringify(listed)).not.toContain(k.secret);
    expect(listed.data.map((x: { id: string }) => x.id)).not.toContain(stranger.id);
  });

  it('lists keys in pages, oldest first: limit and starting_after walk every key once', async () => {
    const pager = await s.newKey('pager');
    const made = [pager.id];
    for (let i = 0; i < 6; i++) made.push((await (await post(s, '/v1/keys', pager.secret, { name: `k${i}` })).json()).id);
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await s.fetch(`/v1/keys?limit=3${after ? `&starting_after=${after}` : ''}`, { key: pager.secret });
      expect(r.status).toBe(200);
      const body = await r.json();
      expect(body.data.length).toBeLessThanOrEqual(3);
      seen.push(...body.data.map((k: { id: string }) => k.id));
      if (!body.has_more) break;
      after = seen.at(-1);
    }
    expect(seen).toEqual(made);
    const whole = await (await s.fetch('/v1/keys', { key: pager.secret })).json();
    expect(whole).toMatchObject({ object: 'list', has_more: false });
    expect(whole.data.map((k: { id: string }) => k.id)).toEqual(made);
    // A cursor from another account, or out of bounds, is a 400 that names the parameter.
    for (const q of [`starting_after=${stranger.id}`, 'limit=0', 'limit=101']) {
      const bad = await s.fetch(`/v1/keys?${q}`, { key: pager.secret });
      expect(bad.status, q).toBe(400);
      expect(bad.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const problem = await bad.json();
      expect(problem.code).toBe('invalid_query');
      expect(problem.errors[0].field).toBe(q.split('=')[0]);
    }
  });

  it('an agent key can neither list nor mint keys, so never an operator key', async () => {
    const agent = await (await post(s, '/v1/keys', ops.secret, { name: 'bot' })).json();
    const mint = await post(s, '/v1/keys', agent.secret, { name: 'escalate', role: 'operator' });
    expect(mint.status).toBe(403);
    expect((await mint.json()).code).toBe('operator_key_required');
    expect((await s.fetch('/v1/keys', { key: agent.secret })).status).toBe(403);
    expect((await post(s, `/v1/keys/${agent.id}/limit`, agent.secret, { hop_limit: 1_000_000 })).status).toBe(403);
  });

  it("declares a key's surface: kinds, a preset or the default; an agent key may not; a hop then obeys it", async () => {
    const agent = await (await post(s, '/v1/keys', ops.secret, { name: 'surface agent' })).json();
    expect((await (await s.fetch(`/v1/keys/${agent.id}`, { key: ops.secret })).json()).surface).toMatchObject({
      declared: false,
      kinds: expect.arrayContaining(['pay', 'bind_policy']),
    });
    const set = await post(s, `/v1/keys/${agent.id}/surface`, ops.secret, { kinds: ['Refund', 'pay', 'pay'] });
    expect(set.status).toBe(200);
    expect((await set.json()).surface).toEqual({ kinds: ['refund', 'pay'], declared: true });
    const fuse = (await (await post(s, '/v1/fuses', ops.secret, {})).json()).fuse_id;
    const hop = async (json: Record<string, unknown>) => (await post(s, '/v1/fuse/hop', agent.secret, { fuse_id: fuse, ...json })).json();
    expect(await hop({ action: { kind: 'wire' } })).toMatchObject({ decision: 'BLOCK', surface: ['refund', 'pay'] });
    expect(await hop({ action: { kind: 'refund' } })).toMatchObject({ decision: 'PERMIT' });
    expect(await hop({})).toMatchObject({ decision: 'BLOCK', surface: ['refund', 'pay'] });
    expect((await (await post(s, `/v1/keys/${agent.id}/surface`, ops.secret, { preset: 'hiring' })).json()).surface.kinds).toContain(
      'schedule_interview',
    );
    expect((await (await post(s, `/v1/keys/${agent.id}/surface`, ops.secret, { default: true })).json()).surface.declared).toBe(false);
    expect(await hop({})).toMatchObject({ decision: 'PERMIT' });
    // Bad input changes nothing; an agent key may not widen its own surface.
    for (const bad of [{}, { kinds: [] }, { kinds: ['a b'] }, { kinds: ['pay'], default: true }, { preset: 'nope' }]) {
      const r = await post(s, `/v1/keys/${agent.id}/surface`, ops.secret, bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await post(s, `/v1/keys/${agent.id}/surface`, agent.secret, { default: true })).status).toBe(403);
    expect((await post(s, `/v1/keys/${ops.id}/surface`, stranger.secret, { default: true })).status).toBe(404);
    expect((await (await s.fetch(`/v1/keys/${agent.id}`, { key: ops.secret })).json()).surface.declared).toBe(false);
  });

  it("another account's key is 404", async () => {
    expect((await s.fetch(`/v1/keys/${stranger.id}`, { key: ops.secret })).status).toBe(404);
    const r = await post(s, `/v1/keys/${stranger.id}/revoke`, ops.secret);
    expect(r.status).toBe(404);
    expect((await s.fetch('/v1/me', { key: stranger.secret })).status).toBe(200);
  });

  it('a revoked key answers 401 at once in this process, and once AUTH_CACHE_MS has passed in another one', async () => {
    const clock = holdCacheClock(other);
    const k = await (await post(s, '/v1/keys', ops.secret, { name: 'to revoke' })).json();
    expect((await other.fetch('/v1/me', { key: k.secret })).status).toBe(200);
    const revoked = await post(s, `/v1/keys/${k.id}/revoke`, ops.secret);
    expect((await revoked.json()).status).toBe('revoked');
    expect((await s.fetch('/v1/me', { key: k.secret })).status).toBe(401);
    // The other server answers from its key cache until the bound has passed.
    expect((await other.fetch('/v1/me', { key: k.secret })).status).toBe(200);
    clock.passBound();
    for (const srv of [s, other]) {
      const r = await srv.fetch('/v1/me', { key: k.secret });
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toContain('Bearer');
      expect((await r.json()).code).toBe('revoked_key');
    }
    clock.release();
  });

  it('an expired key answers 401', async () => {
    const k = await (await post(s, '/v1/keys', ops.secret, { name: 'short', expires_in_seconds: 3600 })).json();
    expect(k.expires_at).not.toBeNull();
    expect((await s.fetch('/v1/me', { key: k.secret })).status).toBe(200);
    // Its hour is over (set in the ledger, where the API refuses a time past).
    expect(await setKeyExpiry(s.ctx.ledger, k.id, new Date(Date.now() - 1000).toISOString())).toBe(true);
    const r = await s.fetch('/v1/me', { key: k.secret });
    expect(r.status).toBe(401);
    expect((await r.json()).code).toBe('expired_key');
    expect((await post(s, '/v1/keys', ops.secret, { name: 'past', expires_at: '2020-01-01T00:00:00Z' })).status).toBe(400);
  });

  it('rotation: the new secret works, the old one only during the grace period', async () => {
    const k = await (await post(s, '/v1/keys', ops.secret, { name: 'rotating' })).json();
    const graced = await (await post(s, `/v1/keys/${k.id}/rotate`, ops.secret, { grace_seconds: 3600 })).json();
    expect(graced.secret).not.toBe(k.secret);
    expect(graced.previous_secret_expires_at).not.toBeNull();
    expect((await (await s.fetch('/v1/me', { key: graced.secret })).json()).id).toBe(k.id);
    expect((await s.fetch('/v1/me', { key: k.secret })).status).toBe(200);

    const now = await (await post(s, `/v1/keys/${k.id}/rotate`, ops.secret, { grace_seconds: 0 })).json();
    expect((await s.fetch('/v1/me', { key: now.secret })).status).toBe(200);
    expect((await s.fetch('/v1/me', { key: graced.secret })).status).toBe(401);
    expect((await s.fetch('/v1/me', { key: k.secret })).status).toBe(401);
    expect((await post(s, `/v1/keys/${k.id}/rotate`, ops.secret, { grace_seconds: 10 ** 9 })).status).toBe(400);
  });

  it('last_used_at is recorded, and not rewritten on every request', async () => {
    const k = await (await post(s, '/v1/keys', ops.secret, { name: 'used' })).json();
    expect(k.last_used_at).toBeNull();
    await s.fetch('/v1/me', { key: k.secret });
    await writesSettled(s.ctx.ledger);
    const seen = (await (await s.fetch(`/v1/keys/${k.id}`, { key: ops.secret })).json()).last_used_at;
    expect(seen).not.toBeNull();
    for (let i = 0; i < 5; i++) await s.fetch('/v1/me', { key: k.secret });
    await writesSettled(s.ctx.ledger);
    expect((await (await s.fetch(`/v1/keys/${k.id}`, { key: ops.secret })).json()).last_used_at).toBe(seen);
  });

  it('last_used_at is written at most once a minute, counting a use another process recorded', async () => {
    const k = await (await post(s, '/v1/keys', ops.secret, { name: 'touched' })).json();
    const stored = async () => {
      await writesSettled(s.ctx.ledger); // queued after any write touchKey made, so settled after it
      return (await s.ctx.ledger.read.execute({ sql: 'SELECT last_used_at FROM api_keys WHERE id = ?', args: [k.id] })).rows[0]!
        .last_used_at;
    };
    const iso = (ms: number) => new Date(ms).toISOString();
    const t = Date.now() + 86_400_000;
    // Another process recorded a use 30 s ago: nothing to write yet.
    touchKey(s.ctx.ledger, { id: k.id, last_used_at: iso(t - 30_000) }, t);
    expect(await stored()).toBeNull();
    // 70 s after that use, this one is written.
    touchKey(s.ctx.ledger, { id: k.id, last_used_at: iso(t - 30_000) }, t + 40_000);
    expect(await stored()).toBe(iso(t + 40_000));
    // A stale copy of the key does not make this process write again within the minute...
    touchKey(s.ctx.ledger, { id: k.id, last_used_at: null }, t + 99_999);
    expect(await stored()).toBe(iso(t + 40_000));
    // ...and past it, it does.
    touchKey(s.ctx.ledger, { id: k.id, last_used_at: null }, t + 100_000);
    expect(await stored()).toBe(iso(t + 100_000));
  });
});

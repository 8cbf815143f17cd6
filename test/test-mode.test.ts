/**
 * Test mode (issue 49 item 1, docs/test-mode.md): `fg_test_` keys whose acts
 * are decided as live ones, signed and logged in the test log of their own,
 * billed nothing, and kept apart from the account's live objects. Over real
 * HTTP on both engines; receipts checked with the second implementation of
 * test/support/receipts.ts, and their note key derived here from the
 * published public key and the test log's origin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.ts';
import { verifiedReceiptPayload } from './support/receipts.ts';
import { readTiledLog } from './support/tile-client.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ REQUEST_LOG_ENABLED: 'true' });
});
afterAll(async () => {
  await s?.stop();
});

type Made = { id: string; secret: string; mode: string; prefix: string; account_id: string };
const post = (path: string, key: string, json: unknown = {}) => s.fetch(path, { method: 'POST', key, json });
const get = async (path: string, key: string) => (await s.fetch(path, { key })).json();
const one = async (sql: string, args: string[] = []) => String((await s.ctx.ledger.read.execute({ sql, args })).rows[0]!.n);
const logSize = (name: string) => one('SELECT size AS n FROM logs WHERE name = ?', [name]);

/** A live operator key in an account of its own, a test agent key made by it, and a LIVE fuse on each side. */
async function account() {
  const ops = await s.newKey('ops');
  const res = await post('/v1/keys', ops.secret, { name: 'tester', role: 'agent', mode: 'test' });
  expect(res.status).toBe(201);
  const test = (await res.json()) as Made;
  const liveAgent = (await (await post('/v1/keys', ops.secret, { name: 'live agent', role: 'agent' })).json()) as Made;
  const testOps = (await (await post('/v1/keys', ops.secret, { name: 'test ops', role: 'operator', mode: 'test' })).json()) as Made;
  const liveFuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id as string;
  const testFuse = (await (await post('/v1/fuses', testOps.secret, { state: 'LIVE' })).json()).fuse_id as string;
  return { ops, test, liveAgent, testOps, liveFuse, testFuse };
}

describe('test keys', () => {
  it('are made with "mode": "test" and a visible fg_test_ prefix; live stays the default, and a rotation keeps the mode', async () => {
    const { ops, test, liveAgent } = await account();
    expect(test.secret).toMatch(/^fg_test_[A-Za-z0-9_-]{43}$/);
    expect(test.prefix.startsWith('fg_test_')).toBe(true);
    expect(test.mode).toBe('test');
    expect(liveAgent.secret.startsWith('fg_live_')).toBe(true);
    expect(liveAgent.mode).toBe('live');
    const bad = await post('/v1/keys', ops.secret, { name: 'x', mode: 'sandbox' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    const rotated = await (await post(`/v1/keys/${test.id}/rotate`, ops.secret, { grace_seconds: 0 })).json();
    expect(rotated.secret.startsWith('fg_test_')).toBe(true);
    expect(rotated.mode).toBe('test');
    expect((await get('/v1/me', rotated.secret)).mode).toBe('test');
  });

  it('come from the CLI with keys create --test', async () => {
    const r = await runCli(['keys', 'create', '--name', 'cli tester', '--test', '--json'], testEnv(s.dir));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.key.startsWith('fg_test_')).toBe(true);
    expect(out.mode).toBe('test');
    expect((await get('/v1/me', out.key)).mode).toBe('test');
  });
});

describe('a test key act', () => {
  it('is decided exactly as a live one, receipted in the test log only, and verifies against that log', async () => {
    const { ops, test, liveAgent, liveFuse, testFuse } = await account();
    const liveBefore = await logSize('receipts');
    const testBefore = await logSize('receipts-test');
    const liveAnswers: any[] = [];
    const testAnswers: any[] = [];
    for (const action of [{ kind: 'pay', amount: '120.00' }, { kind: 'Write' }, { kind: 'launch_missiles' }]) {
      const l = await post('/v1/fuse/hop', liveAgent.secret, { fuse_id: liveFuse, action });
      const t = await post('/v1/fuse/hop', test.secret, { fuse_id: testFuse, action });
      expect(t.status).toBe(l.status);
      liveAnswers.push(await l.json());
      testAnswers.push(await t.json());
    }
    // Blown on both sides, then a hop on each: the same DENY.
    await post(`/v1/fuses/${liveFuse}/dead`, ops.secret);
    const testOps = (await (await post('/v1/keys', ops.secret, { name: 'blower', role: 'operator', mode: 'test' })).json()) as Made;
    expect((await post(`/v1/fuses/${testFuse}/dead`, testOps.secret)).status).toBe(200);
    liveAnswers.push(await (await post('/v1/fuse/hop', liveAgent.secret, { fuse_id: liveFuse, action: { kind: 'pay' } })).json());
    testAnswers.push(await (await post('/v1/fuse/hop', test.secret, { fuse_id: testFuse, action: { kind: 'pay' } })).json());

    const same = (a: any) => ({
      status: a.status,
      ok: a.ok,
      state: a.state,
      verdict: a.verdict,
      decision: a.decision,
      reason: a.reason,
      charge: a.charge,
      surface: a.surface,
      type: a.type,
      code: a.code,
    });
    expect(testAnswers.map(same)).toEqual(liveAnswers.map(same));
    expect(testAnswers.map((a) => a.decision ?? a.code)).toContain('DENY');

    const receipted = testAnswers.filter((a) => a.receipt_id);
    expect(receipted.length).toBeGreaterThanOrEqual(3);
    const host = new URL(s.config.SITE_URL).host;
    const pub = await (await s.fetch('/crypto/public-key')).json();
    for (const a of receipted) {
      expect(a.receipt_id).toMatch(/^rcpt_test_\d+_[A-Za-z0-9_-]{22}$/);
      const payload = await verifiedReceiptPayload(s, a.verify_url);
      expect(payload.test).toBe(true);
      expect(payload.receipt_id).toBe(a.receipt_id);
      const e = await (await s.fetch(`/v1/receipts/${a.receipt_id}`, { headers: { accept: 'application/json' } })).json();
      expect(e.log.name).toBe('receipts-test');
      expect(e.log.origin).toBe(`${host}/receipts-test`);
      expect(e.checkpoint.split('\n')[0]).toBe(`${host}/receipts-test`);
      // The note key is the published key's, under the test log's name (RFC 8032 key, type byte 0x01).
      const raw = Buffer.from(e.log.verifier_key.split('+').slice(2).join('+'), 'base64');
      expect(raw.subarray(1).toString('base64')).toBe(pub.public_key_base64);
      expect(e.log.verifier_key.startsWith(`${host}/receipts-test+`)).toBe(true);
    }
    for (const a of liveAnswers.filter((x) => x.receipt_id)) expect(a.receipt_id).toMatch(/^rcpt_\d+_/);
    // The live log holds the live acts only; the test log the test acts (the blow's receipt too).
    expect(Number(await logSize('receipts')) - Number(liveBefore)).toBe(liveAnswers.filter((a) => a.receipt_id).length + 1);
    expect(Number(await logSize('receipts-test')) - Number(testBefore)).toBe(receipted.length + 1);
    // The test log is served beside the live one, with its own checkpoint and tiles.
    const logs = (await (await s.fetch('/api/v1/logs')).json()).logs.map((l: { name: string }) => l.name);
    expect(logs).toEqual(expect.arrayContaining(['receipts', 'receipts-test']));
    const cp = await (await s.fetch('/api/v1/logs/receipts-test/checkpoint')).text();
    expect(cp.split('\n')[0]).toBe(`${host}/receipts-test`);
    // Read whole through its tiles by a stranger's tile client: every test receipt is there, and none in the live log.
    const tiled = async (name: string) => {
      const d = await (await s.fetch(`/api/v1/logs/${name}`)).json();
      expect(d.tiles_url).toBe(`${new URL(s.config.SITE_URL).origin}/${name}/`);
      const read = await readTiledLog(
        async (path) => new Uint8Array(await (await s.fetch(`/${name}/${path}`)).arrayBuffer()),
        d.verifier_key,
        d.origin,
      );
      return read.entries.map((e) => e.toString('utf8')).join('\n');
    };
    const [testEntries, liveEntries] = [await tiled('receipts-test'), await tiled('receipts')];
    for (const a of receipted) {
      expect(testEntries).toContain(a.receipt_id);
      expect(liveEntries).not.toContain(a.receipt_id);
    }
  });

  it('verifies through POST /v1/receipts/verify as a test receipt, and never as a live one', async () => {
    const { test, testFuse } = await account();
    const hop = await (await post('/v1/fuse/hop', test.secret, { fuse_id: testFuse, action: { kind: 'pay' } })).json();
    const evidence = await (await s.fetch(`/v1/receipts/${hop.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    const ok = await (await s.fetch('/v1/receipts/verify', { json: { receipt: evidence } })).json();
    expect(ok).toMatchObject({ valid: true, test: true, log: 'receipts-test' });
    // Passed off as an entry of the live log, the same evidence fails: its checkpoint is the test log's.
    const posing = {
      ...evidence,
      log: { ...evidence.log, name: 'receipts', origin: evidence.log.origin.replace(/receipts-test$/, 'receipts') },
    };
    const bad = await (await s.fetch('/v1/receipts/verify', { json: { receipt: posing } })).json();
    expect(bad.valid).toBe(false);
    // The browser page says it is a test receipt.
    const html = await (await s.fetch(`/v1/receipts/${hop.receipt_id}`, { headers: { accept: 'text/html' } })).text();
    expect(html).toContain('Test receipt');
  });

  it('bills nothing: no usage, no spend against the key or account caps, while the hop limit still counts', async () => {
    const ops = await s.newKey('ops');
    expect((await post('/v1/account/spend-cap', ops.secret, { spend_cap_usd: '0.10' })).status).toBe(200);
    const test = (await (
      await post('/v1/keys', ops.secret, { name: 't', role: 'agent', mode: 'test', spend_cap_usd: '0.10', hop_limit: 4 })
    ).json()) as Made;
    const testOps = (await (await post('/v1/keys', ops.secret, { name: 'to', role: 'operator', mode: 'test' })).json()) as Made;
    const fuse = (await (await post('/v1/fuses', testOps.secret, { state: 'LIVE' })).json()).fuse_id as string;
    // Four hops, each stating what a live key would be charged: far past both caps of 0.10 USD, all answered.
    for (let i = 0; i < 4; i++) {
      const r = await post('/v1/fuse/hop', test.secret, { fuse_id: fuse, action: { kind: 'Write' } });
      expect(r.status).toBe(200);
      expect((await r.json()).receipt_id).toMatch(/^rcpt_test_/);
    }
    // The key's hop limit is its own and still counts: the fifth hop is refused, with no x402 offer.
    const fifth = await post('/v1/fuse/hop', test.secret, { fuse_id: fuse, action: { kind: 'pay' } });
    expect(fifth.status).toBe(402);
    const limited = await fifth.json();
    expect(limited.code).toBe('hop_limit_exceeded');
    expect(limited.detail).toContain('a test key never pays');
    expect(await one('SELECT COUNT(*) AS n FROM usage_counters WHERE key_id = ?', [test.id])).toBe('0');
    const me = await get('/v1/me', test.secret);
    expect(me.usage.hops_used).toBe(4);
    expect(me.usage.tolls).toEqual([]);
    const key = await get(`/v1/keys/${test.id}`, ops.secret);
    expect(key.spent_this_month_usd).toBe('0.00');
    expect((await get('/v1/account/spend-cap', ops.secret)).spent_this_month_usd).toBe('0.00');
  });
});

describe('test and live objects', () => {
  it('stay apart: a test key sees and changes test fuses and test keys only, and no live setting', async () => {
    const { ops, test, liveAgent, testOps, liveFuse, testFuse } = await account();
    expect((await post('/v1/fuse/hop', test.secret, { fuse_id: liveFuse, action: { kind: 'pay' } })).status).toBe(404);
    expect((await post('/v1/fuse/hop', liveAgent.secret, { fuse_id: testFuse, action: { kind: 'pay' } })).status).toBe(404);
    expect((await post(`/v1/fuses/${liveFuse}/dead`, testOps.secret)).status).toBe(404);
    const testFuses = (await get('/v1/fuses', testOps.secret)).data.map((f: { fuse_id?: string; id?: string }) => f.fuse_id ?? f.id);
    expect(testFuses).toEqual([testFuse]);
    const liveFuses = (await get('/v1/fuses', ops.secret)).data;
    expect(liveFuses.map((f: { fuse_id?: string; id?: string }) => f.fuse_id ?? f.id)).toEqual([liveFuse]);
    expect(liveFuses[0].state).toBe('LIVE');

    // Keys: a test operator lists and manages test keys only, and makes only test keys.
    const listed = (await get('/v1/keys', testOps.secret)).data as Made[];
    expect(listed.every((k) => k.mode === 'test')).toBe(true);
    expect(listed.map((k) => k.id)).toEqual(expect.arrayContaining([test.id, testOps.id]));
    expect((await post(`/v1/keys/${liveAgent.id}/revoke`, testOps.secret)).status).toBe(404);
    expect((await post(`/v1/keys/${ops.id}/rotate`, testOps.secret)).status).toBe(404);
    const live = await post('/v1/keys', testOps.secret, { name: 'sneaky', role: 'operator', mode: 'live' });
    expect(live.status).toBe(403);
    expect((await live.json()).code).toBe('test_key_makes_test_keys');
    const implied = (await (await post('/v1/keys', testOps.secret, { name: 'child' })).json()) as Made;
    expect(implied.mode).toBe('test');
    const cap = await post('/v1/account/spend-cap', testOps.secret, { spend_cap_usd: '1.00' });
    expect(cap.status).toBe(403);
    expect((await get('/v1/account/spend-cap', ops.secret)).spend_cap_usd).toBeNull();
    // The request log: a test key's requests are its test side's, named; the live side's hold none of them.
    const testLog = (await get('/v1/requests?key=tester&limit=200', testOps.secret)).data as Array<{
      key_name: string;
      path: string;
      status: number;
    }>;
    expect(testLog.some((r) => r.path === '/v1/fuse/hop' && r.status === 404 && r.key_name === 'tester')).toBe(true);
    const liveLog = (await get('/v1/requests?limit=200', ops.secret)).data as Array<{ key_id: string }>;
    expect(liveLog.some((r) => r.key_id === test.id || r.key_id === testOps.id)).toBe(false);
    expect(liveLog.some((r) => r.key_id === liveAgent.id)).toBe(true);
    // A live operator manages the account's test keys too.
    expect((await post(`/v1/keys/${test.id}/revoke`, ops.secret)).status).toBe(200);
  });
});

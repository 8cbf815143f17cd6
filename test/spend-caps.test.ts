/**
 * Spend caps (issue 49 item 2): a key's and an account's monthly USD cap,
 * checked under the write lock with the hop quota. Over real HTTP, on both
 * engines: a refusal past a cap is a 402 problem that names the cap, the
 * month's spend and how to raise it, and changes nothing; the update calls
 * refuse bad input; the 80 % alert is queued once; and two server processes on
 * one database racing for the last dollar charge exactly the cap.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { invalidateKeyCache } from '../src/ledger/key-cache.ts';
import { formClient } from './support/form-client.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

let s: TestServer;
let hook: Receiver;
const children: ChildProcess[] = [];

beforeAll(async () => {
  hook = await startReceiver();
  s = await startTestServer({ WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', SPEND_CAP_ACCOUNT_DEFAULT_USD: '25.00' });
});
afterAll(async () => {
  await Promise.all(
    children.map((c) =>
      c.exitCode !== null
        ? undefined
        : new Promise<void>((r) => {
            c.once('exit', () => r());
            c.kill('SIGTERM');
          }),
    ),
  );
  await s?.stop();
  await hook?.close();
});

type Key = { id: string; secret: string; accountId: string };
const post = (path: string, key: string, json?: unknown, base?: string) =>
  base
    ? fetch(base + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(json ?? {}),
      })
    : s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });
const get = async (path: string, key: string) => (await s.fetch(path, { key })).json();

/** An operator key in an account of its own, an agent key in it with `cap`, and a LIVE fuse of the account. */
async function setup(cap?: string | null) {
  const ops = await s.newKey('ops');
  const made = await post('/v1/keys', ops.secret, { name: 'agent', role: 'agent', ...(cap !== undefined ? { spend_cap_usd: cap } : {}) });
  expect(made.status).toBe(201);
  const agent = (await made.json()) as Key & { spend_cap_usd: string | null };
  const fuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id as string;
  return { ops, agent, fuse };
}

/** What a change must not touch: the receipts log's size, the key's counters and usage. */
async function footprint(keyId: string) {
  const db = s.ctx.ledger.read;
  const one = async (sql: string, args: string[] = []) => String((await db.execute({ sql, args })).rows[0]!.n);
  return {
    receipts: await one("SELECT size AS n FROM logs WHERE name = 'receipts'"),
    usage: await one('SELECT COALESCE(SUM(usd * 1000000 + micros), 0) AS n FROM usage_counters WHERE key_id = ?', [keyId]),
    hops: await one('SELECT COALESCE(SUM(hops), 0) AS n FROM hop_counters WHERE key_id = ?', [keyId]),
  };
}

describe('a key spend cap', () => {
  it('refuses the act that would pass it with a 402 naming the cap, the spend and how to raise it, and changes nothing', async () => {
    const { ops, agent, fuse } = await setup('0.30');
    expect(agent.spend_cap_usd).toBe('0.30');
    // A PERMIT charges execute_gate, 0.10 USD: three fit.
    for (let i = 0; i < 3; i++) expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    const before = await footprint(agent.id);
    const over = await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse });
    expect(over.status).toBe(402);
    expect(over.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const p = await over.json();
    expect(p).toMatchObject({
      status: 402,
      code: 'spend_cap_reached',
      scope: 'key',
      key_id: agent.id,
      spend_cap_usd: '0.30',
      spent_this_month_usd: '0.30',
      charge_usd: '0.10',
      month: new Date().toISOString().slice(0, 7),
      dashboard_url: `/dashboard/keys/${agent.id}`,
    });
    expect(p.detail).toContain('0.30 USD');
    expect(p.how_to_raise).toContain(`POST /v1/keys/${agent.id}/spend-cap`);
    expect(await footprint(agent.id)).toEqual(before);
    // A refusal (a BLOCK's 0.50 NAP hold) is a charge too, and is refused the same way.
    const blocked = await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse, action: { kind: 'write' } });
    expect([blocked.status, (await blocked.json()).code]).toEqual([402, 'spend_cap_reached']);
    expect(await footprint(agent.id)).toEqual(before);

    // /v1/me and the key show the cap, the month's spend and what is left.
    const me = await get('/v1/me', agent.secret);
    expect(me.spend_caps).toMatchObject({
      key: { spend_cap_usd: '0.30', spent_this_month_usd: '0.30', remaining_usd: '0.00' },
      account: { spend_cap_usd: null, remaining_usd: null },
    });
    expect(await get(`/v1/keys/${agent.id}`, ops.secret)).toMatchObject({
      spend_cap_usd: '0.30',
      spent_this_month_usd: '0.30',
      remaining_usd: '0.00',
    });

    // Raised as the 402 says: the next hop fits; removed (null): no cap.
    const raised = await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: '0.40' });
    expect(raised.status).toBe(200);
    expect(await raised.json()).toMatchObject({ spend_cap_usd: '0.40', spent_this_month_usd: '0.30', remaining_usd: '0.10' });
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(402);
    expect((await (await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: null })).json()).spend_cap_usd).toBeNull();
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
  });

  it('counts the charges of every act, not only hops: a classify past the cap is refused the same way', async () => {
    const { agent, fuse } = await setup('0.15');
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    // The classifier's toll is 0.05 USD: one fits beside the hop's 0.10, the next does not.
    expect((await post('/v1/classify', agent.secret, { text: 'wire 5,000 USD to the supplier' })).status).toBe(200);
    const before = await footprint(agent.id);
    const over = await post('/v1/classify', agent.secret, { text: 'wire 5,000 USD to the supplier' });
    expect(over.status).toBe(402);
    expect(await over.json()).toMatchObject({
      code: 'spend_cap_reached',
      spend_cap_usd: '0.15',
      spent_this_month_usd: '0.15',
      charge_usd: '0.05',
    });
    expect(await footprint(agent.id)).toEqual(before);
  });

  it('counts the whole month: a cap set mid-month includes what was charged before it', async () => {
    const { ops, agent, fuse } = await setup();
    for (let i = 0; i < 2; i++) expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect((await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: '0.25' })).status).toBe(200);
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(402);
    // Charges of an earlier month do not count.
    await s.ctx.ledger.write((tx) =>
      tx.execute({ sql: "UPDATE usage_counters SET day = '2020-01-01' WHERE key_id = ?", args: [agent.id] }),
    );
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
  });

  it('refuses a bad cap with a 400 problem and keeps the one it had', async () => {
    const { ops, agent } = await setup('5.00');
    for (const bad of ['-1.00', 'ten', '1.234', '1e3', '', 5]) {
      const r = await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: bad });
      expect(r.status, String(bad)).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      const p = await r.json();
      expect(p.code).toBe('invalid_body');
      expect(JSON.stringify(p.errors)).toContain('spend_cap_usd');
    }
    expect((await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, {})).status).toBe(400);
    expect((await post('/v1/keys', ops.secret, { name: 'x', spend_cap_usd: '-3' })).status).toBe(400);
    expect((await get(`/v1/keys/${agent.id}`, ops.secret)).spend_cap_usd).toBe('5.00');
    // An agent key cannot change a cap, its own included.
    expect((await post(`/v1/keys/${agent.id}/spend-cap`, agent.secret, { spend_cap_usd: '50.00' })).status).toBe(403);
    expect((await post('/v1/account/spend-cap', agent.secret, { spend_cap_usd: null })).status).toBe(403);
  });
});

describe('an account spend cap', () => {
  it('holds for all the keys of the account together', async () => {
    const { ops, agent, fuse } = await setup();
    const other = await s.newKey('other agent', undefined, 'agent', ops.accountId);
    const set = await post('/v1/account/spend-cap', ops.secret, { spend_cap_usd: '0.20' });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({
      object: 'spend_cap',
      account_id: ops.accountId,
      spend_cap_usd: '0.20',
      spent_this_month_usd: '0.00',
      remaining_usd: '0.20',
    });
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect((await post('/v1/fuse/hop', other.secret, { fuse_id: fuse })).status).toBe(200);
    const before = await footprint(agent.id);
    const over = await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse });
    expect(over.status).toBe(402);
    const p = await over.json();
    expect(p).toMatchObject({
      code: 'spend_cap_reached',
      scope: 'account',
      account_id: ops.accountId,
      spend_cap_usd: '0.20',
      spent_this_month_usd: '0.20',
      dashboard_url: '/dashboard/account',
    });
    expect(p.how_to_raise).toContain('POST /v1/account/spend-cap');
    expect(await footprint(agent.id)).toEqual(before);
    expect(await get('/v1/account/spend-cap', ops.secret)).toMatchObject({ spent_this_month_usd: '0.20', remaining_usd: '0.00' });
    expect((await get('/v1/me', other.secret)).spend_caps.account).toEqual({
      spend_cap_usd: '0.20',
      spent_this_month_usd: '0.20',
      remaining_usd: '0.00',
    });
    expect((await post('/v1/account/spend-cap', ops.secret, { spend_cap_usd: '-0.20' })).status).toBe(400);
    expect((await post('/v1/account/spend-cap', ops.secret, { spend_cap_usd: null })).status).toBe(200);
    expect((await post('/v1/fuse/hop', other.secret, { fuse_id: fuse })).status).toBe(200);
  });

  it('starts a new account at SPEND_CAP_ACCOUNT_DEFAULT_USD', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'caps@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'caps@example.invalid'))!.account_id;
    const ops = await s.newKey('ops', undefined, 'operator', accountId);
    expect(await get('/v1/account/spend-cap', ops.secret)).toMatchObject({ account_id: accountId, spend_cap_usd: '25.00' });
  });
});

describe('the 80 % alert', () => {
  it('is queued once per key and month, when a charge reaches 80 % of the cap', async () => {
    const { ops, agent, fuse } = await setup('0.50');
    const sub = await post('/v1/alerts', ops.secret, { url: hook.url('/spend'), events: ['spend.threshold'] });
    expect(sub.status).toBe(201);
    const queued = async () =>
      ((await get('/v1/alerts', ops.secret)).deliveries as Array<{ event_type: string }>).filter((d) => d.event_type === 'spend.threshold')
        .length;
    for (let i = 0; i < 3; i++) expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect(await queued()).toBe(0);
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect(await queued()).toBe(1);
    await hook.arrived(1, '/spend');
    const event = JSON.parse(hook.on('/spend')[0]!.body);
    expect(event).toMatchObject({
      type: 'spend.threshold',
      data: {
        scope: 'key',
        key_id: agent.id,
        account_id: ops.accountId,
        spend_cap_usd: '0.50',
        spent_usd: '0.40',
        remaining_usd: '0.10',
        threshold_percent: 80,
      },
    });
    // Past 80 % again after the cap was raised and lowered: still once this month.
    expect((await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: '10.00' })).status).toBe(200);
    expect((await post(`/v1/keys/${agent.id}/spend-cap`, ops.secret, { spend_cap_usd: '0.50' })).status).toBe(200);
    expect((await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse })).status).toBe(200);
    expect(await queued()).toBe(1);
  });
});

describe('on the dashboard', () => {
  it("shows and edits a key's cap on its page and the account's on the account page", async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'caps-page@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'caps-page@example.invalid'))!.account_id;
    const agent = await s.newKey('agent', undefined, 'agent', accountId);
    const ops = await s.newKey('ops', undefined, 'operator', accountId);

    const saved = await c.post(`/dashboard/keys/${agent.id}/spend-cap`, { spend_cap_usd: '12.50' });
    expect([saved.status, saved.headers.get('location')]).toEqual([303, `/dashboard/keys/${agent.id}?done=spend-cap`]);
    expect((await get(`/v1/keys/${agent.id}`, ops.secret)).spend_cap_usd).toBe('12.50');
    const page = await (await c.get(`/dashboard/keys/${agent.id}?done=spend-cap`)).text();
    expect(page).toContain('Saved the spend cap.');
    expect(page).toContain('<strong>0.00 USD</strong> of <strong>12.50 USD</strong> spent this month');
    expect(page).toContain(
      'name="spend_cap_usd" inputmode="decimal" pattern="[0-9]{1,10}([.][0-9]{1,2})?" placeholder="250.00" value="12.50"',
    );

    // A bad amount is the API's 400, said on the page; the cap stays.
    const bad = await c.post(`/dashboard/keys/${agent.id}/spend-cap`, { spend_cap_usd: '-5' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('spend_cap_usd');
    expect((await get(`/v1/keys/${agent.id}`, ops.secret)).spend_cap_usd).toBe('12.50');
    // Emptied: no cap.
    expect((await c.post(`/dashboard/keys/${agent.id}/spend-cap`, { spend_cap_usd: '' })).status).toBe(303);
    expect((await get(`/v1/keys/${agent.id}`, ops.secret)).spend_cap_usd).toBeNull();

    // The account's default came from SPEND_CAP_ACCOUNT_DEFAULT_USD; the account page changes it.
    expect(await (await c.get('/dashboard/account')).text()).toContain(
      '<strong>0.00 USD</strong> of <strong>25.00 USD</strong> spent this month',
    );
    const account = await c.post('/dashboard/account/spend-cap', { spend_cap_usd: '40' });
    expect([account.status, account.headers.get('location')]).toEqual([303, '/dashboard/account?done=spend-cap']);
    expect(await get('/v1/account/spend-cap', ops.secret)).toMatchObject({ spend_cap_usd: '40.00', remaining_usd: '40.00' });
  });
});

function spawnServer(env: Record<string, string>): Promise<string> {
  const { BASE_URL: _b, SITE_URL: _s, ...parent } = process.env;
  const child = spawn(process.execPath, ['src/server.ts'], {
    env: { ...parent, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const m = /"url":"(http:\/\/[^"]+)"/.exec(buf);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}: ${buf}`)));
  });
}

describe('exact across processes', () => {
  it('two server processes on one database racing for the last dollar charge exactly the cap', async () => {
    const { agent, fuse } = await setup('1.00');
    const other = await spawnServer(testEnv(s.dir));
    // 30 hops at once, half through each process: ten fit under 1.00 USD.
    const results = await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const r = await post('/v1/fuse/hop', agent.secret, { fuse_id: fuse }, i % 2 ? other : s.url);
        return r.status === 402 ? `402 ${(await r.json()).code}` : String(r.status);
      }),
    );
    expect(results.filter((r) => r === '200')).toHaveLength(10);
    expect(results.filter((r) => r === '402 spend_cap_reached')).toHaveLength(20);
    expect((await footprint(agent.id)).usage).toBe('1000000');
    invalidateKeyCache(s.ctx.ledger.read);
    expect((await get('/v1/me', agent.secret)).spend_caps.key).toEqual({
      spend_cap_usd: '1.00',
      spent_this_month_usd: '1.00',
      remaining_usd: '0.00',
    });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twoAccounts, type TestKey } from './support/accounts.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('operator management API (what the dashboard calls)', () => {
  let s: TestServer;
  let ops: TestKey;
  let bot: TestKey;
  let stranger: TestKey;
  const post = (path: string, key: string, json?: unknown) =>
    s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

  beforeAll(async () => {
    s = await startTestServer();
    ({ ops, bot, stranger } = await twoAccounts(s));
  });
  afterAll(() => s.stop());

  it('grants: an operator creates and revokes them, an agent cannot, another account sees none', async () => {
    const body = { lines: ['cyber'], states: ['CA'], max_premium: '250000.00', name: 'Acme MGA' };
    expect((await post('/v1/pas/grants', bot.secret, body)).status).toBe(403);
    const created = await post('/v1/pas/grants', ops.secret, body);
    expect(created.status).toBe(201);
    const g = await created.json();
    expect(g).toMatchObject({ object: 'authority_grant', max_premium: '250000.00', lines: ['cyber'], states: ['CA'], revoked_at: null });
    const check = {
      fuse_id: (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id,
      grant_id: g.grant_id,
      premium: '1000.00',
      line: 'cyber',
      state: 'CA',
    };
    expect((await post('/v1/pas/mga-authority', bot.secret, check)).status).toBe(200);
    expect((await (await s.fetch('/v1/pas/grants', { key: stranger.secret })).json()).data).toEqual([]);
    expect((await post(`/v1/pas/grants/${g.grant_id}/revoke`, stranger.secret)).status).toBe(404);
    expect((await post('/v1/pas/grants', ops.secret, { ...body, max_premium: 'lots' })).status).toBe(400);
    expect((await post(`/v1/pas/grants/${g.grant_id}/revoke`, ops.secret)).status).toBe(200);
    expect((await post('/v1/pas/mga-authority', bot.secret, check)).status).toBe(404);
  });

  it('licences and tickets are listed for every key of the account', async () => {
    expect((await post('/v1/pas/licenses/lic_list/charge', ops.secret)).status).toBe(200);
    const list = await (await s.fetch('/v1/pas/licenses', { key: bot.secret })).json();
    expect(list.data).toEqual([expect.objectContaining({ license_id: 'lic_list', state: 'LIVE', outstanding: 0 })]);
    expect((await (await s.fetch('/v1/pas/licenses', { key: stranger.secret })).json()).data).toEqual([]);
    // The list reports the parent as its snapshot does: two tickets for one job make it ARMED; once one of them
    // binds the job, the other can never redeem, and the parent is LIVE with nothing outstanding.
    const fuse_id = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id;
    const write = { op: 'bind', policy: 'P-list' };
    const [t1, t2] = await Promise.all(
      [1, 2].map(
        async () =>
          (await (await post('/v1/pas/pas-a/pre-bind', bot.secret, { fuse_id, license_id: 'lic_list', job_id: 'job_list', write })).json())
            .ticket.ticket_id,
      ),
    );
    const listed = async () => (await (await s.fetch('/v1/pas/licenses', { key: bot.secret })).json()).data[0];
    const snapshot = async () => (await s.fetch('/v1/pas/licenses/lic_list', { key: bot.secret })).json();
    expect(await listed()).toMatchObject({ state: 'ARMED', outstanding: 2 });
    expect(await snapshot()).toMatchObject({ state: 'ARMED', children: { outstanding: 2 } });
    expect((await post('/v1/pas/bind-ticket/redeem', bot.secret, { ticket_id: t1, write, now: new Date().toISOString() })).status).toBe(
      200,
    );
    expect(t2).not.toBe(t1);
    expect(await listed()).toMatchObject({ state: 'LIVE', outstanding: 0 });
    expect(await snapshot()).toMatchObject({ state: 'LIVE', children: { outstanding: 0, superseded: 1 } });
    expect((await s.fetch('/v1/pas/tickets?limit=5', { key: bot.secret })).status).toBe(200);
  });

  it('a failed webhook delivery can be retried by an operator of its account', async () => {
    const now = new Date().toISOString();
    await s.ctx.ledger.write(async (tx) => {
      await tx.execute({
        sql: "INSERT INTO webhook_subscriptions (id, key_id, url, created_at) VALUES ('whs_t', ?, 'https://hooks.fusegate.invalid/h', ?)",
        args: [ops.accountId, now],
      });
      for (const [id, state] of [
        ['whd_failed', 'failed'],
        ['whd_done', 'delivered'],
      ]) {
        await tx.execute({
          sql: "INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, body, state, attempts, next_attempt_at, created_at) VALUES (?, 'whs_t', 'ev', 'trigger.fired', '{}', ?, 8, 0, ?)",
          args: [id!, state!, now],
        });
      }
    });
    expect((await post('/signal/trigger/webhooks/deliveries/whd_failed/retry', bot.secret)).status).toBe(403);
    expect((await post('/signal/trigger/webhooks/deliveries/whd_failed/retry', stranger.secret)).status).toBe(404);
    expect((await post('/signal/trigger/webhooks/deliveries/whd_done/retry', ops.secret)).status).toBe(409);
    const r = await post('/signal/trigger/webhooks/deliveries/whd_failed/retry', ops.secret);
    expect(r.status).toBe(200);
    const state = (await s.ctx.ledger.read.execute("SELECT state FROM webhook_deliveries WHERE id = 'whd_failed'")).rows[0]!.state;
    // Back in the queue (the deliverer may already have taken it and recorded a new attempt).
    expect(['pending', 'failed', 'delivered']).toContain(String(state));
    const attempts = Number(
      (await s.ctx.ledger.read.execute("SELECT attempts FROM webhook_deliveries WHERE id = 'whd_failed'")).rows[0]!.attempts,
    );
    expect(String(state) === 'pending' || attempts > 8).toBe(true);
  });
});

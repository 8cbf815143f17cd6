/**
 * Alerts (issue 31 item 4): a fuse's state changes and refused hops reach the
 * account's chosen webhook subscribers, signed and retried as trigger webhooks,
 * through a real server and a real receiving HTTP server. Nothing is waited for
 * by time: an event is queued with the act that causes it, so what will be
 * delivered is known at once; arrivals and recorded attempts are awaited as
 * they happen (support/receiver.ts, support/commits.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { untilCommitted } from './support/commits.ts';
import { formClient } from './support/form-client.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('alerts: webhook events for fuse state changes and refused hops', () => {
  let s: TestServer;
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver();
    s = await startTestServer({
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_BACKOFF_MS: '50',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      CLEARING_INTERVAL_HOURS: '0',
    });
  });
  afterAll(async () => {
    await s?.stop();
    await hook?.close();
  });

  const on = (path: string) => hook.on(path);
  /** The account's deliveries as GET /v1/alerts lists them. */
  const deliveries = async (secret: string) =>
    (await (await s.fetch('/v1/alerts', { key: secret })).json()).deliveries as Array<{
      subscription_id: string;
      event_type: string;
      state: string;
    }>;
  const events = (path: string) =>
    on(path).map((c) => JSON.parse(c.body) as { event_id: string; type: string; fuse_id: string; data: Record<string, unknown> });

  it('delivers the events each subscription chose, signed with the service key, and retries a failure', async () => {
    const op = await s.newKey('ops');
    const agent = await s.newKey('agent', 1000, 'agent', op.accountId);
    const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'payments' } })).json();
    const other = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'other' } })).json();

    const subscribe = async (json: unknown) => s.fetch('/v1/alerts', { key: op.secret, json });
    const all = await subscribe({ url: hook.url('/all') });
    expect(all.status).toBe(201);
    const allBody = await all.json();
    expect(allBody).toMatchObject({
      object: 'alert_subscription',
      events: ['fuse.state_changed', 'hop.denied', 'review.opened', 'review.decided', 'review.expired', 'spend.threshold'],
      fuse_id: null,
    });
    const fuseOnly = await subscribe({ url: hook.url('/fuse-only'), events: ['fuse.state_changed'] });
    expect(fuseOnly.status).toBe(201);
    const fuseOnlyId = (await fuseOnly.json()).id as string;
    expect((await subscribe({ url: hook.url('/denied-other'), events: ['hop.denied'], fuse_id: other.fuse_id })).status).toBe(201);
    // A trigger-rail subscriber of every trigger receives no alert.
    expect((await s.fetch('/signal/trigger/webhooks', { key: op.secret, json: { url: hook.url('/triggers') } })).status).toBe(201);

    // The agent blows the fuse, then its hops are refused; a permitted hop alerts nobody.
    expect((await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse.fuse_id } })).status).toBe(200);
    expect((await s.fetch(`/v1/fuses/${fuse.fuse_id}/dead`, { key: agent.secret, method: 'POST' })).status).toBe(200);
    const denied = await (
      await s.fetch('/v1/fuse/hop', {
        key: agent.secret,
        json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00' }, tool: 'pay_invoice' },
      })
    ).json();
    expect(denied.decision).toBe('DENY');

    // Each event is queued with the act that caused it: these three deliveries, and no other, are to be made.
    const queued = (await deliveries(op.secret)).map((d) => `${d.subscription_id} ${d.event_type}`).sort();
    expect(queued).toEqual([`${allBody.id} fuse.state_changed`, `${allBody.id} hop.denied`, `${fuseOnlyId} fuse.state_changed`].sort());
    await hook.arrived(2, '/all');
    await hook.arrived(1, '/fuse-only');
    const got = events('/all');
    expect(got.map((e) => e.type).sort()).toEqual(['fuse.state_changed', 'hop.denied']);
    const changed = got.find((e) => e.type === 'fuse.state_changed')!;
    expect(changed).toMatchObject({ fuse_id: fuse.fuse_id, data: { from: 'LIVE', to: 'DEAD', key_id: agent.id } });
    const deny = got.find((e) => e.type === 'hop.denied')!;
    expect(deny).toMatchObject({
      fuse_id: fuse.fuse_id,
      data: {
        decision: 'DENY',
        state: 'DEAD',
        act_kind: 'pay',
        tool: 'pay_invoice',
        key_id: agent.id,
        receipt_id: denied.receipt_id,
        verify_url: denied.verify_url,
      },
    });
    expect(events('/fuse-only').map((e) => e.type)).toEqual(['fuse.state_changed']);
    expect(on('/denied-other')).toEqual([]);
    expect(on('/triggers')).toEqual([]);

    // Signed as trigger webhooks are: Ed25519 over `${webhook-id}.${webhook-timestamp}.${body}`.
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const key = await crypto.subtle.importKey('jwk', pub.jwk, { name: 'Ed25519' }, false, ['verify']);
    for (const c of on('/all')) {
      const id = String(c.headers['webhook-id']);
      expect(id).toBe(JSON.parse(c.body).event_id);
      const sig = String(c.headers['webhook-signature']).split(' ')[0]!.split(',')[1]!;
      const content = new TextEncoder().encode(`${id}.${String(c.headers['webhook-timestamp'])}.${c.body}`);
      expect(await crypto.subtle.verify('Ed25519', key, Buffer.from(sig, 'base64'), content)).toBe(true);
      expect(await crypto.subtle.verify('Ed25519', key, Buffer.from(sig, 'base64'), new TextEncoder().encode(`${id}.0.${c.body}`))).toBe(
        false,
      );
    }

    // The account sees its subscriptions and the deliveries, each with its attempts, once they are recorded.
    await untilCommitted(s.ctx.ledger, async () => (await deliveries(agent.secret)).every((d) => d.state === 'delivered'));
    const listed = await (await s.fetch('/v1/alerts', { key: agent.secret })).json();
    expect(listed.data).toHaveLength(3);
    expect(listed.deliveries.filter((d: { state: string }) => d.state === 'delivered')).toHaveLength(3);
    // The trigger rail's own listing is unchanged by alerts.
    const triggerList = await (await s.fetch('/signal/trigger/webhooks', { key: op.secret })).json();
    expect(triggerList.subscriptions).toHaveLength(1);
    expect(triggerList.deliveries).toEqual([]);
  });

  it('retries a failed delivery with the same event id', async () => {
    const op = await s.newKey('ops-retry');
    // The first two deliveries fail (500, 503): they are retried, as a trigger webhook is.
    const flaky = await startReceiver([500, 503]);
    try {
      expect(
        (await s.fetch('/v1/alerts', { key: op.secret, json: { url: flaky.url('/flaky'), events: ['fuse.state_changed'] } })).status,
      ).toBe(201);
      const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { state: 'UNSIGNED' } })).json();
      expect((await s.fetch(`/v1/fuses/${fuse.fuse_id}/charge`, { key: op.secret, method: 'POST' })).status).toBe(200);
      await flaky.arrived(3);
      expect(new Set(flaky.calls.map((c) => c.headers['webhook-id'])).size).toBe(1);
      expect(JSON.parse(flaky.calls[2]!.body)).toMatchObject({ type: 'fuse.state_changed', data: { from: 'UNSIGNED', to: 'LIVE' } });
      await untilCommitted(s.ctx.ledger, async () => (await deliveries(op.secret))[0]?.state === 'delivered');
      const l = await (await s.fetch('/v1/alerts', { key: op.secret })).json();
      expect(l.deliveries[0].attempts.map((a: { status: number }) => a.status)).toEqual([500, 503, 200]);
    } finally {
      await flaky.close();
    }
  });

  it('refuses bad input with a problem naming it and writes nothing; removal stops the events', async () => {
    const op = await s.newKey('ops-bad');
    const agent = await s.newKey('agent-bad', 1000, 'agent', op.accountId);
    const count = async () => (await (await s.fetch('/v1/alerts', { key: op.secret })).json()).data.length;
    const bad = await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/x'), events: ['fuse.blown'] } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(JSON.stringify(await bad.json())).toMatch(/events/);
    const none = await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/x'), events: [] } });
    expect(none.status).toBe(400);
    expect((await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/x'), fuse_id: 'fuse_nobodys' } })).status).toBe(404);
    // Managing alerts takes an operator key.
    expect((await s.fetch('/v1/alerts', { key: agent.secret, json: { url: hook.url('/x') } })).status).toBe(403);
    expect(await count()).toBe(0);

    const sub = await (await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/removed') } })).json();
    const removed = await s.fetch(`/v1/alerts/${sub.id}/remove`, { key: op.secret, method: 'POST' });
    expect(removed.status).toBe(200);
    expect((await s.fetch(`/v1/alerts/${sub.id}/remove`, { key: op.secret, method: 'POST' })).status).toBe(404);
    const listed = await (await s.fetch('/v1/alerts', { key: op.secret })).json();
    expect(listed.data).toEqual([]);
    expect(listed.removed).toEqual([expect.objectContaining({ id: sub.id, disabled_reason: 'removed by the account' })]);
    const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, method: 'POST' })).json();
    expect((await s.fetch(`/v1/fuses/${fuse.fuse_id}/dead`, { key: op.secret, method: 'POST' })).status).toBe(200);
    // The blow's events were queued with it: none for the removed subscription, so none can ever be sent.
    const queued = await s.ctx.ledger.read.execute({
      sql: 'SELECT COUNT(*) AS n FROM webhook_deliveries WHERE subscription_id = ?',
      args: [sub.id],
    });
    expect(queued.rows[0]!.n).toBe(0);
    expect(on('/removed')).toEqual([]);
  });
});

describe('alerts: a test event, and the dashboard page that sends it', () => {
  let s: TestServer;
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver();
    s = await startTestServer({
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_BACKOFF_MS: '50',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      CLEARING_INTERVAL_HOURS: '0',
    });
  });
  afterAll(async () => {
    await s?.stop();
    await hook?.close();
  });

  it('delivers a test event to one subscription through the normal path, signed and marked test, listed with its endpoint and payload', async () => {
    const op = await s.newKey('ops-test');
    const agent = await s.newKey('agent-test', 1000, 'agent', op.accountId);
    const sub = await (await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/tested') } })).json();
    const other = await (await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/untouched') } })).json();
    const sent = await s.fetch(`/v1/alerts/${sub.id}/test`, { key: op.secret, method: 'POST' });
    expect(sent.status).toBe(202);
    const queued = await sent.json();
    expect(queued).toMatchObject({ object: 'alert_delivery', subscription_id: sub.id, event_type: 'alert.test', state: 'pending' });

    await hook.arrived(1, '/tested');
    const [call] = hook.on('/tested');
    const body = JSON.parse(call!.body);
    expect(body).toMatchObject({ event_id: queued.event_id, type: 'alert.test', test: true, data: { subscription_id: sub.id } });
    expect(String(call!.headers['webhook-id'])).toBe(queued.event_id);
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const key = await crypto.subtle.importKey('jwk', pub.jwk, { name: 'Ed25519' }, false, ['verify']);
    const sig = String(call!.headers['webhook-signature']).split(' ')[0]!.split(',')[1]!;
    expect(
      await crypto.subtle.verify(
        'Ed25519',
        key,
        Buffer.from(sig, 'base64'),
        new TextEncoder().encode(`${queued.event_id}.${String(call!.headers['webhook-timestamp'])}.${call!.body}`),
      ),
    ).toBe(true);
    expect(hook.on('/untouched')).toEqual([]);

    await untilCommitted(s.ctx.ledger, async () =>
      (await (await s.fetch('/v1/alerts', { key: op.secret })).json()).deliveries.every((d: { state: string }) => d.state === 'delivered'),
    );
    const listed = (await (await s.fetch('/v1/alerts', { key: op.secret })).json()).deliveries;
    expect(listed).toEqual([expect.objectContaining({ id: queued.id, url: hook.url('/tested'), payload: body, state: 'delivered' })]);

    // Only an operator sends one, only to a subscription of its account that is active.
    expect((await s.fetch(`/v1/alerts/${sub.id}/test`, { key: agent.secret, method: 'POST' })).status).toBe(403);
    const stranger = await s.newKey('stranger');
    const notTheirs = await s.fetch(`/v1/alerts/${sub.id}/test`, { key: stranger.secret, method: 'POST' });
    expect(notTheirs.status).toBe(404);
    expect((await notTheirs.json()).code).toBe('unknown_alert');
    expect((await s.fetch(`/v1/alerts/${other.id}/remove`, { key: op.secret, method: 'POST' })).status).toBe(200);
    expect((await s.fetch(`/v1/alerts/${other.id}/test`, { key: op.secret, method: 'POST' })).status).toBe(404);
  });

  it('on the dashboard: sends a test event, labels deliveries with their endpoint, shows the payload, keeps the form when a URL is refused', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'alerts-page@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'alerts-page@example.invalid'))!.account_id;
    const ops = await s.newKey('ops', undefined, 'operator', accountId);
    const fuse = (await (await s.fetch('/v1/fuses', { key: ops.secret, json: { label: 'payments' } })).json()).fuse_id as string;

    // A refused URL answers the page again with what was typed, chosen and selected.
    const refused = await c.post('/dashboard/alerts', { url: 'ftp://hooks.invalid/x', events: 'hop.denied', fuse_id: fuse });
    expect(refused.status).toBe(400);
    const again = await refused.text();
    expect(again).toContain('role="alert"');
    expect(again).toContain('value="ftp://hooks.invalid/x"');
    expect(again).toContain('value="hop.denied" id="a-ev-1" checked>');
    expect(again).toContain('value="fuse.state_changed" id="a-ev-0">');
    expect(again).toContain(`<option value="${fuse}" selected>`);

    const added = await c.post('/dashboard/alerts', { url: hook.url('/page'), events: 'fuse.state_changed' });
    expect(added.status).toBe(303);
    const id = new URL(added.headers.get('location')!, s.url).searchParams.get('added')!;
    const list = await (await c.get('/dashboard/alerts')).text();
    expect(list).toContain(`action="/dashboard/alerts/${id}/test"`);
    const tested = await c.post(`/dashboard/alerts/${id}/test`, {});
    expect([tested.status, tested.headers.get('location')]).toEqual([303, `/dashboard/alerts?tested=${id}#deliveries`]);
    await hook.arrived(1, '/page');
    expect(JSON.parse(hook.on('/page')[0]!.body)).toMatchObject({ type: 'alert.test', test: true });
    const after = await (await c.get(`/dashboard/alerts?tested=${id}`)).text();
    expect(after).toContain(`Test event sent to ${id}`);
    expect(after).toContain(`<td data-label="Endpoint" class="url">${hook.url('/page')}</td>`);
    expect(after).toMatch(/alert\.test <span class="tag">test<\/span>/);
    expect(after).toMatch(/<details><summary>Payload<\/summary><pre class="payload">\{\n {2}&#34;event_id&#34;/);
    expect(after).toContain('&#34;test&#34;: true');
  });
});

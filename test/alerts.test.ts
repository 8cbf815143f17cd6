/**
 * Alerts (issue 31 item 4): a fuse's state changes and refused hops reach the
 * account's chosen webhook subscribers, signed and retried as trigger webhooks,
 * through a real server and a real receiving HTTP server.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

interface Call {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A subscriber that answers `statuses` in turn (then 200) and keeps every request. */
async function receiver(statuses: number[] = []): Promise<{ server: Server; url: (path: string) => string; calls: Call[] }> {
  const calls: Call[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      calls.push({ path: req.url ?? '', headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, url: (path) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, calls };
}

async function until(check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('alerts: webhook events for fuse state changes and refused hops', () => {
  let s: TestServer;
  let hook: Awaited<ReturnType<typeof receiver>>;
  beforeAll(async () => {
    // The first delivery to /flaky fails with 500: it is retried, as a trigger webhook is.
    hook = await receiver([]);
    s = await startTestServer({ WEBHOOK_POLL_MS: '50', WEBHOOK_BACKOFF_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', CLEARING_INTERVAL_HOURS: '0' });
  });
  afterAll(async () => {
    await s?.stop();
    await new Promise((r) => hook?.server.close(r));
  });

  const on = (path: string) => hook.calls.filter((c) => c.path === path);
  const events = (path: string) => on(path).map((c) => JSON.parse(c.body) as { event_id: string; type: string; fuse_id: string; data: Record<string, unknown> });

  it('delivers the events each subscription chose, signed with the service key, and retries a failure', async () => {
    const op = await s.newKey('ops');
    const agent = await s.newKey('agent', 1000, 'agent', op.accountId);
    const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'payments' } })).json();
    const other = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'other' } })).json();

    const subscribe = async (json: unknown) => s.fetch('/v1/alerts', { key: op.secret, json });
    const all = await subscribe({ url: hook.url('/all') });
    expect(all.status).toBe(201);
    const allBody = await all.json();
    expect(allBody).toMatchObject({ object: 'alert_subscription', events: ['fuse.state_changed', 'hop.denied'], fuse_id: null });
    expect((await subscribe({ url: hook.url('/fuse-only'), events: ['fuse.state_changed'] })).status).toBe(201);
    expect((await subscribe({ url: hook.url('/denied-other'), events: ['hop.denied'], fuse_id: other.fuse_id })).status).toBe(201);
    // A trigger-rail subscriber of every trigger receives no alert.
    expect((await s.fetch('/signal/trigger/webhooks', { key: op.secret, json: { url: hook.url('/triggers') } })).status).toBe(201);

    // The agent blows the fuse, then its hops are refused; a permitted hop alerts nobody.
    expect((await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse.fuse_id } })).status).toBe(200);
    expect((await s.fetch(`/v1/fuses/${fuse.fuse_id}/dead`, { key: agent.secret, method: 'POST' })).status).toBe(200);
    const denied = await (await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay', amount: '120.00' }, tool: 'pay_invoice' } })).json();
    expect(denied.decision).toBe('DENY');

    await until(() => on('/all').length >= 2 && on('/fuse-only').length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    const got = events('/all');
    expect(got.map((e) => e.type).sort()).toEqual(['fuse.state_changed', 'hop.denied']);
    const changed = got.find((e) => e.type === 'fuse.state_changed')!;
    expect(changed).toMatchObject({ fuse_id: fuse.fuse_id, data: { from: 'LIVE', to: 'DEAD', key_id: agent.id } });
    const deny = got.find((e) => e.type === 'hop.denied')!;
    expect(deny).toMatchObject({ fuse_id: fuse.fuse_id, data: { decision: 'DENY', state: 'DEAD', act_kind: 'pay', tool: 'pay_invoice', key_id: agent.id, receipt_id: denied.receipt_id, verify_url: denied.verify_url } });
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
      expect(await crypto.subtle.verify('Ed25519', key, Buffer.from(sig, 'base64'), new TextEncoder().encode(`${id}.0.${c.body}`))).toBe(false);
    }

    // The account sees its subscriptions and the deliveries, each with its attempts.
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
    const flaky = await receiver([500, 503]);
    try {
      expect((await s.fetch('/v1/alerts', { key: op.secret, json: { url: flaky.url('/flaky'), events: ['fuse.state_changed'] } })).status).toBe(201);
      const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { state: 'UNSIGNED' } })).json();
      expect((await s.fetch(`/v1/fuses/${fuse.fuse_id}/charge`, { key: op.secret, method: 'POST' })).status).toBe(200);
      await until(() => flaky.calls.length >= 3);
      expect(new Set(flaky.calls.map((c) => c.headers['webhook-id'])).size).toBe(1);
      expect(JSON.parse(flaky.calls[2]!.body)).toMatchObject({ type: 'fuse.state_changed', data: { from: 'UNSIGNED', to: 'LIVE' } });
      await until(async () => {
        const l = await (await s.fetch('/v1/alerts', { key: op.secret })).json();
        return l.deliveries[0]?.state === 'delivered';
      });
      const l = await (await s.fetch('/v1/alerts', { key: op.secret })).json();
      expect(l.deliveries[0].attempts.map((a: { status: number }) => a.status)).toEqual([500, 503, 200]);
    } finally {
      await new Promise((r) => flaky.server.close(r));
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
    await new Promise((r) => setTimeout(r, 300));
    expect(on('/removed')).toEqual([]);
  });
});

/**
 * Edges found under attack (issue 29 item 8): a webhook retried while its
 * subscription is disabled, invalid UTF-8 in a JSON body, the per-address
 * connection cap, the Idempotency-Key in-progress window, the inference proxy's
 * validation before its 503, the mga-authority demo's defaults, the first
 * clearing checkpoint of a fresh deployment.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue, recordAttempt } from '../src/ledger/webhooks.ts';
import { untilCommitted } from './support/commits.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let key: { id: string; secret: string };
beforeAll(async () => {
  s = await startTestServer({
    DEMO_RATE_LIMIT: '1000',
    WEBHOOK_POLL_MS: '600000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    HTTP_MAX_CONNECTIONS_PER_ADDRESS: '8',
    HTTP_IDLE_TIMEOUT_MS: '60000',
  });
  key = await s.newKey('edges');
});
afterAll(() => s.stop());

describe('webhooks', () => {
  it('a delivery whose attempt ends after its subscription was disabled fails, never stays pending', async () => {
    const sub = await (await s.fetch('/signal/trigger/webhooks', { key: key.secret, json: { url: 'http://127.0.0.1:9/hook' } })).json();
    expect(
      (
        await s.fetch('/signal/trigger/publish', {
          key: key.secret,
          json: { template_id: 'bind_gate_hold', threshold: { metric: 'm', operator: 'gte', value: '1' } },
        })
      ).status,
    ).toBe(201);
    expect(sub.id, JSON.stringify(sub)).toBeDefined();
    // The deliverer makes its first attempt (nothing listens there); the retry is then claimed as a worker would.
    const attempts = async () =>
      Number(
        (
          await s.ctx.ledger.read.execute({
            sql: 'SELECT MAX(attempts) AS n FROM webhook_deliveries WHERE subscription_id = ?',
            args: [sub.id],
          })
        ).rows[0]!.n ?? 0,
      );
    await untilCommitted(s.ctx.ledger, async () => (await attempts()) >= 1);
    const [d] = await s.ctx.ledger.write((tx) => claimDue(tx, Date.now() + 3_600_000, 1000, 64));
    expect(d!.subscription_id).toBe(sub.id);
    // Another delivery's failure disables the subscription while this attempt is in flight.
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: "UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = '5 failed attempts in a row' WHERE id = ?",
        args: [new Date().toISOString(), sub.id],
      }),
    );
    await s.ctx.ledger.write((tx) =>
      recordAttempt(tx, d!, { ok: false, status: 500, error: 'HTTP 500', durationMs: 3, retryAt: Date.now() + 1000, disableAfter: 100 }),
    );
    const row = (await s.ctx.ledger.read.execute({ sql: 'SELECT state, last_error FROM webhook_deliveries WHERE id = ?', args: [d!.id] }))
      .rows[0]!;
    expect(row.state).toBe('failed');
    expect(String(row.last_error)).toContain('subscription disabled');
  });
});

describe('request bodies', () => {
  it('invalid UTF-8 in a JSON body is 400 invalid_utf8, nothing charged', async () => {
    const body = Buffer.concat([Buffer.from('{"text":"wire '), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(' USD"}')]);
    const r = await s.fetch('/v1/classify', { method: 'POST', body, key: key.secret, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect((await r.json()).code).toBe('invalid_utf8');
    const me = await (await s.fetch('/v1/me', { key: key.secret })).json();
    expect(me.usage.tolls.find((t: { sku: string }) => t.sku === 'classify')).toBeUndefined();
  });

  it('the inference proxy validates its body before saying it has no upstream', async () => {
    const bad = await s.fetch('/api/v1/inference/chat/completions', { key: key.secret, json: { messages: 'hi' } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).code).toBe('invalid_body');
    const good = await s.fetch('/api/v1/inference/chat/completions', {
      key: key.secret,
      json: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(good.status).toBe(503);
  });

  it('/demo/pas/mga-authority accepts {} (every field has a default)', async () => {
    const r = await s.fetch('/demo/pas/mga-authority', { json: {} });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ decision: 'ALLOW', charge: null });
  });
});

describe('Idempotency-Key', () => {
  it('the 409 of a key held by an interrupted request shows the 60 s window and when it ends', async () => {
    const taken = new Date(Date.now() - 10_000).toISOString();
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: "INSERT INTO idempotency (key_id, idem_key, request_hash, state, created_at) VALUES (?, 'held-1', ?, 'running', ?)",
        args: [key.id, 'x', taken],
      }),
    );
    // The same request hash is needed for "in progress" (another request is 422): take the hash the server computes.
    const first = await s.fetch('/v1/classify', { key: key.secret, json: { text: 'pay 1 USD' }, headers: { 'idempotency-key': 'held-2' } });
    expect(first.status).toBe(200);
    const hash = (
      await s.ctx.ledger.read.execute({
        sql: "SELECT request_hash FROM idempotency WHERE key_id = ? AND idem_key = 'held-2'",
        args: [key.id],
      })
    ).rows[0]!.request_hash as string;
    await s.ctx.ledger.write((tx) =>
      tx.execute({ sql: "UPDATE idempotency SET request_hash = ? WHERE key_id = ? AND idem_key = 'held-1'", args: [hash, key.id] }),
    );
    const before = Date.now();
    const r = await s.fetch('/v1/classify', { key: key.secret, json: { text: 'pay 1 USD' }, headers: { 'idempotency-key': 'held-1' } });
    const after = Date.now();
    expect(r.status).toBe(409);
    const b = await r.json();
    const expires = Date.parse(taken) + 60_000;
    expect(b).toMatchObject({
      code: 'idempotency_in_progress',
      lease_seconds: 60,
      in_progress_since: taken,
      lease_expires_at: new Date(expires).toISOString(),
    });
    // What is left of the lease when the server answered, which was between `before` and `after`.
    expect(b.lease_seconds_left).toBeGreaterThanOrEqual(Math.ceil((expires - after) / 1000));
    expect(b.lease_seconds_left).toBeLessThanOrEqual(Math.ceil((expires - before) / 1000));
    expect(b.detail).toContain('60 s');
  });
});

describe('connections', () => {
  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: Number(new URL(s.url).port) }, () => resolve(socket));
      socket.once('error', reject);
    });

  it('one address holding idle sockets past its cap loses its oldest idle ones; a new request still gets through', async () => {
    const held: Socket[] = [];
    const closed = new Set<Socket>();
    let twelveClosed!: () => void;
    const twelve = new Promise<void>((resolve) => (twelveClosed = resolve));
    for (let i = 0; i < 20; i++) {
      const sock = await open();
      sock.on('error', () => {});
      sock.once('close', () => {
        closed.add(sock);
        if (closed.size === 12) twelveClosed();
      });
      held.push(sock);
    }
    await twelve;
    // The oldest went first; the newest 8 are open.
    expect(held.slice(0, 12).every((x) => closed.has(x))).toBe(true);
    expect(held.slice(12).some((x) => closed.has(x))).toBe(false);
    expect((await s.fetch('/health')).status).toBeLessThan(600);
    held.forEach((h) => h.destroy());
  }, 15_000);
});

describe('clearing', () => {
  it('a fresh deployment seals its first clearing checkpoint as it starts', async () => {
    const fresh = await startTestServer();
    try {
      await untilCommitted(fresh.ctx.ledger, async () => (await fresh.fetch('/api/v1/clearing/network/latest.json')).status === 200);
      const ev = await (await fresh.fetch('/api/v1/clearing/network/latest.json')).json();
      expect(ev.attestation).toMatchObject({ type: 'clearing.network', receipts: { from: 0 } });
    } finally {
      await fresh.stop();
    }
  });
});

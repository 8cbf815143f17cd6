/**
 * The guard every test file runs under (test/support/loopback-only.ts): a
 * connection or DNS lookup beyond loopback is refused and fails the test, from
 * any client of this process: node:net, fetch, node:http, dns, and the
 * server's own outbound client delivering a webhook. Each attempt here is one
 * the guard must catch; the test takes the record of it, so that only an
 * attempt nobody expected fails a test.
 */
import dns from 'node:dns';
import { request } from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postGuarded } from '../src/net/outbound.ts';
import { untilCommitted } from './support/commits.ts';
import { OutboundRefused, failOnOutboundAttempts, isLoopbackAddress, takeOutboundAttempts } from './support/loopback-only.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, type TestServer } from './support/server.ts';

/** The error a promise rejects with, or its cause (fetch wraps the socket's error). */
async function failure(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err as Error & { cause?: unknown },
  );
  expect(e, 'it was not refused').toBeDefined();
  return ((e!.cause as Error | undefined) ?? e!) as { code?: string; message: string };
}

const connectTo = (host: string, port = 80) =>
  new Promise<void>((resolve, reject) => {
    const socket = net.connect({ host, port }, () => resolve());
    socket.once('error', reject);
  });

describe('the test process talks to loopback only', () => {
  // Private and link-local addresses (IPv4 and IPv6): the guard refuses every address but loopback
  // alike, so no test needs to name a public one.
  const addresses = ['10.0.0.1', '192.168.0.7', '169.254.0.1', 'fd00::1'];

  it('refuses a TCP connection to any address but loopback, before a packet is sent', async () => {
    for (const host of addresses) {
      expect(await failure(connectTo(host))).toMatchObject({ code: 'ETESTOUTBOUND' });
      expect(takeOutboundAttempts()).toEqual([`connection to ${host} port 80`]);
    }
    // The (port, host) form too.
    const socket = net.connect(443, '10.0.0.1');
    expect(await failure(new Promise((_, reject) => socket.once('error', reject)))).toBeInstanceOf(OutboundRefused);
    expect(takeOutboundAttempts()).toEqual(['connection to 10.0.0.1 port 443']);
  });

  it('refuses fetch, node:http and DNS lookups of any name but loopback; answers .invalid ENOTFOUND without asking anyone', async () => {
    // Names under reserved test domains (RFC 6761, RFC 2606): refused before any resolver is asked, as a public name would be.
    expect(await failure(fetch('https://gate.fusegate.test/'))).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(await failure(fetch('http://10.0.0.1/'))).toMatchObject({ code: 'ETESTOUTBOUND' });
    const viaHttp = new Promise((resolve, reject) =>
      request('http://hooks.fusegate.test/hook', { method: 'POST' }, resolve).on('error', reject).end(),
    );
    expect(await failure(viaHttp)).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(await failure(dns.promises.lookup('witness.fusegate.test'))).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(
      await failure(new Promise((resolve, reject) => dns.lookup('gate.example', (e, a) => (e ? reject(e) : resolve(a))))),
    ).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(await failure(dns.promises.resolve4('gate.fusegate.test'))).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(takeOutboundAttempts()).toEqual([
      'DNS lookup of gate.fusegate.test',
      'connection to 10.0.0.1 port 80',
      'DNS lookup of hooks.fusegate.test',
      'DNS lookup of witness.fusegate.test',
      'DNS lookup of gate.example',
      'DNS resolve4 of gate.fusegate.test',
    ]);
    // .invalid never resolves (RFC 6761): ENOTFOUND, and no attempt to record.
    expect(await failure(fetch('https://hooks.fusegate.invalid/x'))).toMatchObject({ code: 'ENOTFOUND' });
    expect(await failure(dns.promises.lookup('hooks.fusegate.invalid'))).toMatchObject({ code: 'ENOTFOUND' });
    expect(takeOutboundAttempts()).toEqual([]);
  });

  it('lets loopback through: 127.0.0.0/8, ::1 and localhost', async () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'].every(isLoopbackAddress)).toBe(true);
    expect(['128.0.0.1', '::2', '::ffff:10.0.0.1', '0.0.0.0', 'localhost'].some(isLoopbackAddress)).toBe(false);
    const receiver = await startReceiver();
    try {
      expect((await fetch(receiver.url('/a'), { method: 'POST', body: 'x' })).status).toBe(200);
      expect((await fetch(receiver.url('/b').replace('127.0.0.1', 'localhost'), { method: 'POST', body: 'y' })).status).toBe(200);
    } finally {
      await receiver.close();
    }
    expect(takeOutboundAttempts()).toEqual([]);
  });

  it('fails the test when an attempt was made, even one whose error was swallowed', async () => {
    await connectTo('10.0.0.1').catch(() => undefined);
    expect(failOnOutboundAttempts).toThrow(/reached outside loopback.*connection to 10\.0\.0\.1 port 80/);
    expect(failOnOutboundAttempts).not.toThrow();
  });
});

describe("the server's own outbound client is under the guard too", () => {
  let s: TestServer;
  beforeAll(async () => {
    // Private targets allowed (an operator's own network), so that a subscription can name an address beyond loopback that is not a public one.
    s = await startTestServer({ WEBHOOK_POLL_MS: '50', CLEARING_INTERVAL_HOURS: '0', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
  });
  afterAll(() => s.stop());

  it('postGuarded (webhook delivery) is refused, with or without its own address check', async () => {
    for (const allowPrivate of [false, true]) {
      expect(
        await failure(postGuarded('https://hooks.fusegate.test/hook', { headers: {}, body: '{}', timeoutMs: 30_000, allowPrivate })),
      ).toMatchObject({ code: 'ETESTOUTBOUND' });
    }
    // An address its own check lets through (an operator's private network): the guard still refuses the connection.
    expect(
      await failure(postGuarded('http://10.0.0.1/hook', { headers: {}, body: '{}', timeoutMs: 30_000, allowPrivate: true })),
    ).toMatchObject({ code: 'ETESTOUTBOUND' });
    expect(takeOutboundAttempts()).toEqual([
      'DNS lookup of hooks.fusegate.test',
      'DNS lookup of hooks.fusegate.test',
      'connection to 10.0.0.1 port 80',
    ]);
  });

  it('a webhook subscribed at an address beyond loopback is never delivered: the attempt fails with the refusal, and is recorded', async () => {
    const key = await s.newKey('hooks');
    const sub = await (await s.fetch('/signal/trigger/webhooks', { key: key.secret, json: { url: 'http://10.0.0.1/hook' } })).json();
    expect(sub.object).toBe('webhook_subscription');
    expect(
      (
        await s.fetch('/signal/trigger/publish', {
          key: key.secret,
          json: { template_id: 'bind_gate_hold', threshold: { metric: 'm', operator: 'gte', value: '1' } },
        })
      ).status,
    ).toBe(201);
    const lastError = async () =>
      (await s.ctx.ledger.read.execute({ sql: 'SELECT last_error FROM webhook_deliveries WHERE subscription_id = ?', args: [sub.id] }))
        .rows[0]?.last_error;
    await untilCommitted(s.ctx.ledger, async () => typeof (await lastError()) === 'string');
    expect(String(await lastError())).toMatch(/refused: tests talk to loopback only/);
    expect(takeOutboundAttempts()).toContain('connection to 10.0.0.1 port 80');
    // The retries that follow are refused as well; they are this test's, not the next one's.
    await s.close();
    takeOutboundAttempts();
  });
});

describe('a receiver on loopback is reached as before', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(() => receiver.close());

  it('a request to it arrives', async () => {
    await fetch(receiver.url('/hook'), { method: 'POST', body: '{}' });
    await receiver.arrived(1, '/hook');
    expect(receiver.on('/hook')).toHaveLength(1);
  });
});

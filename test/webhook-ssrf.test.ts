import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NonPublicTarget, isPublicAddress, postGuarded } from '../src/net/outbound.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('webhook targets are guarded against server-side request forgery', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  let receiver: Server;
  let port = 0;
  let hits = 0;

  beforeAll(async () => {
    receiver = createServer((_req, res) => {
      hits++;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
    s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0' });
    key = await s.newKey('hooks');
  });
  afterAll(async () => {
    await s.stop();
    await new Promise((r) => receiver.close(r));
  });

  it('classifies addresses: loopback, private, link-local, shared, mapped and unique-local are not public', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '[::1]',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(a), a).toBe(true);
  });

  it('refuses every IPv6 form that carries an IPv4 address (compatible, NAT64, 6to4, Teredo) and other special ranges', async () => {
    for (const a of [
      '::7f00:1',
      '[::7f00:1]',
      '::127.0.0.1',
      '64:ff9b::7f00:1',
      '64:ff9b::a00:1',
      '64:ff9b:1::1',
      '2002:7f00:1::1',
      '2001::1',
      '198.18.0.1',
      '192.0.0.8',
      '240.0.0.1',
      '255.255.255.255',
      'fec0::1',
      '2001:db8::1',
      'ff02::1',
    ]) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    for (const url of [
      'http://[::7f00:1]/hook',
      'http://[64:ff9b::7f00:1]/hook',
      'http://[::ffff:7f00:1]/hook',
      'http://[2002:7f00:1::1]/hook',
    ]) {
      const r = await s.fetch('/signal/trigger/webhooks', { method: 'POST', key: key.secret, json: { url } });
      expect(r.status, url).toBe(422);
      expect((await r.json()).code, url).toBe('webhook_target_not_public');
    }
  });

  it('refuses to subscribe a loopback, private or metadata URL (422, nothing stored); a name resolving to loopback too', async () => {
    for (const url of [
      `http://127.0.0.1:${port}/hook`,
      'http://[::1]/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.7/hook',
      `http://localhost:${port}/hook`,
    ]) {
      const r = await s.fetch('/signal/trigger/webhooks', { method: 'POST', key: key.secret, json: { url } });
      expect(r.status, url).toBe(422);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      const p = await r.json();
      expect(p.code, url).toBe('webhook_target_not_public');
      expect(p.detail).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS');
    }
    const unresolvable = await s.fetch('/signal/trigger/webhooks', {
      method: 'POST',
      key: key.secret,
      json: { url: 'https://no-such-host.invalid/hook' },
    });
    expect(unresolvable.status).toBe(422);
    expect((await unresolvable.json()).code).toBe('webhook_target_unresolvable');
    const list = await (await s.fetch('/signal/trigger/webhooks', { key: key.secret })).json();
    expect(list.subscriptions).toEqual([]);
  });

  it('delivery checks the address it connects to: a loopback target is refused before any byte is sent, unless allowed', async () => {
    const post = (url: string, allowPrivate: boolean) =>
      postGuarded(url, { headers: { 'content-type': 'application/json' }, body: '{}', timeoutMs: 2000, allowPrivate });
    await expect(post(`http://127.0.0.1:${port}/hook`, false)).rejects.toBeInstanceOf(NonPublicTarget);
    await expect(post(`http://localhost:${port}/hook`, false)).rejects.toThrow(/not a public address/);
    expect(hits).toBe(0);
    expect(await post(`http://127.0.0.1:${port}/hook`, true)).toBe(204);
    expect(hits).toBe(1);
  });
});

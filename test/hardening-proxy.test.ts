import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

const lookup = (s: TestServer, headers: Record<string, string>) => s.fetch('/demo/lookup', { headers });

describe('demo rate limit behind a trusted proxy (TRUST_PROXY_HOPS=1)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ TRUST_PROXY_HOPS: '1', DEMO_RATE_LIMIT: '2', DEMO_RATE_WINDOW_SECONDS: '3600' });
  });
  afterAll(() => s.stop());

  it('counts each forwarded client apart, and a spoofed left-hand entry changes nothing', async () => {
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(429);
    // The client prepends a fake address: the proxy appended the real one, which is what counts.
    expect((await lookup(s, { 'x-forwarded-for': '198.51.100.9, 203.0.113.1' })).status).toBe(429);
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200);
  });

  it('reads RFC 7239 Forwarded (bracketed IPv6 with a port) before X-Forwarded-For', async () => {
    const h = { forwarded: 'for="[2001:db8::7]:4711";proto=https', 'x-forwarded-for': '203.0.113.1' };
    expect((await lookup(s, h)).status).toBe(200);
    expect((await lookup(s, h)).status).toBe(200);
    expect((await lookup(s, h)).status).toBe(429);
    const rows = await s.ctx.ledger.read.execute("SELECT bucket FROM rate_windows WHERE bucket LIKE '%2001:db8::7%'");
    expect(rows.rows).toHaveLength(1);
  });
});

describe('demo rate limit without proxy trust (the default)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ DEMO_RATE_LIMIT: '2', DEMO_RATE_WINDOW_SECONDS: '3600' });
  });
  afterAll(() => s.stop());

  it('ignores forwarding headers: a client cannot reset its limit by inventing addresses', async () => {
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(200);
    expect((await lookup(s, { 'x-forwarded-for': '203.0.113.3', forwarded: 'for=203.0.113.4' })).status).toBe(429);
  });

  it('deletes past windows of every client, not only the caller’s', async () => {
    await s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: 'INSERT INTO rate_windows (bucket, window_start, count) VALUES (?, ?, ?), (?, ?, ?)',
        args: ['demo:192.0.2.1', 1000, 5, 'demo:192.0.2.2', 3600, 9],
      }),
    );
    await lookup(s, {});
    const left = await s.ctx.ledger.read.execute(
      "SELECT COUNT(*) AS n FROM rate_windows WHERE bucket IN ('demo:192.0.2.1', 'demo:192.0.2.2')",
    );
    expect(left.rows[0]!.n).toBe(0);
  });
});

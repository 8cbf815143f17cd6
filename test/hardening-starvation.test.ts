import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

/** Opens a raw TCP connection to the test server; resolves once connected. */
function open(s: TestServer): Promise<Socket> {
  const { port } = new URL(s.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves when the socket is closed (by the server, for a client socket): no timer, only the test's timeout bounds the wait. */
function closed(socket: Socket): Promise<void> {
  if (socket.destroyed || socket.readableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.on('error', () => {});
    socket.resume();
  });
}

describe('a flood of idle and slow clients does not starve the server', () => {
  let s: TestServer;
  const flood: Socket[] = [];
  const drip: NodeJS.Timeout[] = [];
  beforeAll(async () => {
    s = await startTestServer({
      HTTP_HEADERS_TIMEOUT_MS: '1500',
      HTTP_REQUEST_TIMEOUT_MS: '3000',
      HTTP_IDLE_TIMEOUT_MS: '1500',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
      HTTP_MAX_CONNECTIONS: '1000',
    });
  });
  afterAll(async () => {
    drip.forEach(clearInterval);
    flood.forEach((f) => f.destroy());
    await s.stop();
  });

  it('answers /health and a hop while 600 idle and 100 slowloris connections are open, then closes them all', async () => {
    for (let i = 0; i < 600; i++) flood.push(await open(s));
    const slow: Socket[] = [];
    for (let i = 0; i < 100; i++) {
      const socket = await open(s);
      socket.on('error', () => {});
      socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n');
      // One header line every 200 ms: never finishing the headers, never idle long.
      drip.push(setInterval(() => socket.writable && socket.write(`X-Slow-${Math.random().toString(36).slice(2)}: 1\r\n`), 200));
      slow.push(socket);
    }
    flood.push(...slow);

    const health = await s.fetch('/health');
    expect([200, 503]).toContain(health.status);
    expect((await health.json()).database).toBeDefined();
    const hop = await s.fetch('/demo/hop', { json: {} });
    expect(hop.status).toBe(200);
    expect((await hop.json()).decision).toBeDefined();

    // Every idle socket is closed by the idle deadline and every slow one by the headers deadline.
    await Promise.all(flood.map(closed));
    drip.forEach(clearInterval);
  }, 30_000);

  it('a connection that sent a request and went quiet is not cut while its answer is pending, only after', async () => {
    const socket = await open(s);
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await closed(socket);
    expect(answer).toMatch(/^HTTP\/1\.1 (200|503)/);
  }, 15_000);
});

describe('the connection cap', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ HTTP_MAX_CONNECTIONS: '20', HTTP_IDLE_TIMEOUT_MS: '60000' });
  });
  afterAll(() => s.stop());

  it('closes connections past HTTP_MAX_CONNECTIONS at once and serves again when they go', async () => {
    const held: Socket[] = [];
    // The server's side of each held connection: once all are closed, the server counts none of them.
    const serverSide: Socket[] = [];
    const track = (socket: Socket) => serverSide.push(socket);
    s.server.on('connection', track);
    for (let i = 0; i < 20; i++) held.push(await open(s));
    const extra = await open(s);
    await closed(extra);
    s.server.off('connection', track);
    expect(serverSide).toHaveLength(20);
    held.forEach((h) => h.destroy());
    await Promise.all(serverSide.map(closed));
    expect((await s.fetch('/health')).status).toBeLessThan(600);
  }, 15_000);
});

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

describe('HTTP manners', () => {
  let s: TestServer;
  let key: string;
  beforeAll(async () => {
    s = await startTestServer();
    key = (await s.newKey('manners')).secret;
  });
  afterAll(() => s.stop());

  it.each(['/api/v1/nap/scale', '/api/v1/clear/network', '/api/v1/relay/network', '/health', '/openapi.json', '/api/v1/clear/catalog'])(
    'GET %s is readable from any origin',
    async (path) => {
      const r = await s.fetch(path, { headers: { origin: 'https://agent.example' } });
      expect(r.status).toBeLessThan(500);
      expect(r.headers.get('access-control-allow-origin')).toBe('*');
    },
  );

  it('demo answers and keyed answers (errors included) carry CORS too', async () => {
    const demo = await s.fetch('/demo/hop', { json: {}, headers: { origin: 'https://agent.example' } });
    expect(demo.headers.get('access-control-allow-origin')).toBe('*');
    expect(demo.headers.get('access-control-expose-headers')).toMatch(/RateLimit/);
    const keyed = await s.fetch('/v1/me', { key, headers: { origin: 'https://agent.example' } });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get('access-control-allow-origin')).toBe('*');
    const denied = await s.fetch('/v1/me', { headers: { origin: 'https://agent.example' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('OPTIONS is a correct preflight for the keyed APIs', async () => {
    const r = await s.fetch('/v1/fuse/hop', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://agent.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });
    expect(r.status).toBe(204);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-allow-methods')).toContain('POST');
    const allowed = r.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const h of ['authorization', 'content-type', 'idempotency-key']) expect(allowed).toContain(h);
    expect(Number(r.headers.get('access-control-max-age'))).toBeGreaterThan(0);
    expect((await s.fetch('/no/such/path', { method: 'OPTIONS' })).status).toBe(404);
  });

  it('MCP keeps its origin allow-list on the preflight', async () => {
    const evil = await s.fetch('/mcp', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    const own = await s.fetch('/mcp', {
      method: 'OPTIONS',
      headers: { origin: new URL(s.config.BASE_URL).origin, 'access-control-request-method': 'POST' },
    });
    expect(own.headers.get('access-control-allow-origin')).toBe(new URL(s.config.BASE_URL).origin);
  });

  it('POST on a static catalog is 405 naming GET and HEAD', async () => {
    const r = await s.fetch('/api/v1/clear/catalog', { json: {} });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, HEAD');
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('HEAD /health answers like GET, without a body', async () => {
    const r = await s.fetch('/health', { method: 'HEAD' });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await r.text()).toBe('');
  });

  it('robots.txt keeps crawlers off the /go/ click counters', async () => {
    const text = await (await s.fetch('/robots.txt')).text();
    expect(text).toMatch(/^Disallow: \/go\/$/m);
  });

  it('the documented 1000 spoliation evidence items with long names fit the body limit', async () => {
    const evidence = Array.from({ length: 1000 }, (_, i) => ({
      name: `${String(i).padStart(4, '0')}-${'é'.repeat(251)}`,
      sha256: createHash('sha256').update(String(i)).digest('hex'),
    }));
    const body = JSON.stringify({ matter_ref: 'claim-1', evidence });
    expect(Buffer.byteLength(body)).toBeGreaterThan(s.config.MAX_BODY_BYTES);
    const r = await s.fetch('/api/v1/spoliation-seal', { key, method: 'POST', body, headers: { 'content-type': 'application/json' } });
    expect(r.status).toBe(200);
    expect((await r.json()).evidence_count).toBe(1000);
    // Other routes keep MAX_BODY_BYTES.
    expect((await s.fetch('/v1/classify', { key, method: 'POST', body, headers: { 'content-type': 'application/json' } })).status).toBe(
      413,
    );
  });

  it(
    'unknown CLI flags are usage errors (exit 2), and nothing is created',
    async () => {
      const run = (...args: string[]) => runCli(args, testEnv(s.dir));
      const typo = await run('keys', 'create', '--name', 'x', '--hop-limt', '5');
      expect(typo.code).toBe(2);
      expect(typo.stderr).toMatch(/hop-limt/);
      expect((await run('keys', 'list', '--verbose')).code).toBe(2);
      expect((await run('keys', 'create', '--name')).code).toBe(2);
      const listed = JSON.parse((await run('keys', 'list', '--json')).stdout) as { keys: Array<{ name: string }> };
      expect(listed.keys.map((k) => k.name)).not.toContain('x');
      const ok = await run('keys', 'create', '--name', 'y', '--hop-limit', '5', '--json');
      expect(ok.code).toBe(0);
      expect(JSON.parse(ok.stdout).hop_limit).toBe(5);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

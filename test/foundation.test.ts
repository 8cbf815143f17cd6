import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../src/config.ts';
import { loadKeyring, rotateSigningKey } from '../src/crypto/keys.ts';
import { readBody } from '../src/api/body.ts';
import { createApp } from '../src/api/app.ts';
import { toResponse, reply } from '../src/api/reply.ts';
import { openLedger } from '../src/ledger/db.ts';
import { migrate, migrationFiles } from '../src/ledger/migrate.ts';
import { PROCESS_TEST_TIMEOUT_MS, cleanEnv, run, runCli } from './support/cli.ts';
import { holdCacheClock, startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';

const NODE = process.execPath;

/** The CLI against a test server's files, without blocking the server (test/support/cli.ts says why). */
function cli(dir: string, args: string[], env: Record<string, string> = {}) {
  return runCli(args, { ...testEnv(dir), ...env });
}

describe('configuration', () => {
  it('has working defaults for a laptop', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(4321);
    expect(c.DATABASE_URL).toBe('file:./data/fusegate.db');
    expect(c.BASE_URL).toBe('http://localhost:4321');
    expect(c.SITE_URL).toBe('http://localhost:4321');
  });

  it('names every bad variable', () => {
    expect(() => loadConfig({ PORT: 'eighty', BASE_URL: 'not a url' })).toThrow(/PORT[\s\S]*BASE_URL|BASE_URL[\s\S]*PORT/);
  });

  it(
    'stops the server at start-up with the variable named and exit code 2',
    async () => {
      const r = await run(NODE, ['src/server.ts'], { ...cleanEnv(), PORT: '99999' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/PORT/);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('migrations', () => {
  it('apply to an empty database, then are a no-op, and keep existing data', async () => {
    const dir = tempDir();
    const url = `file:${join(dir, 'm.db')}`;
    const client = createClient({ url });
    const first = await migrate(client);
    expect(first).toEqual(migrationFiles().map((f) => f.replace(/\.(sql|ts)$/, '')));
    await client.execute("INSERT INTO hop_counters (key_id, day, hops) VALUES ('k', '2026-01-01', 50000)");
    expect(await migrate(client)).toEqual([]);
    const rows = await client.execute('SELECT COUNT(*) AS n FROM hop_counters');
    expect(rows.rows[0]!.n).toBe(1);
    client.close();
    // A second ledger on the same, existing file starts cleanly.
    const ledger = await openLedger({ ...loadConfig(testEnv(dir)), DATABASE_URL: url });
    const mode = await ledger.read.execute('PRAGMA journal_mode');
    expect(String(mode.rows[0]![0]).toLowerCase()).toBe('wal');
    await ledger.close();
  });
});

describe('write queue', () => {
  it('commits concurrent jobs together and isolates a failing job', async () => {
    const dir = tempDir();
    const ledger = await openLedger(loadConfig(testEnv(dir)));
    const jobs = Array.from({ length: 50 }, (_, i) =>
      ledger.write(async (tx) => {
        await tx.execute({ sql: "INSERT INTO hop_counters (key_id, day, hops) VALUES (?, '2026-01-01', 1)", args: [`k${i}`] });
        if (i === 7) throw new Error('job 7 fails');
        return i;
      }),
    );
    const results = await Promise.allSettled(jobs);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    const rs = await ledger.read.execute("SELECT COUNT(*) AS n FROM hop_counters WHERE key_id <> 'k7'");
    expect(rs.rows[0]!.n).toBe(49);
    const seven = await ledger.read.execute("SELECT COUNT(*) AS n FROM hop_counters WHERE key_id = 'k7'");
    expect(seven.rows[0]!.n).toBe(0);
    await ledger.close();
  });

  it('waits out another process holding the write lock, then commits', async () => {
    const dir = tempDir();
    const env = testEnv(dir);
    const ledger = await openLedger(loadConfig(env));
    // A second connection stands in for another process: it holds the write lock for a while.
    const other = createClient({ url: env.DATABASE_URL! });
    await other.execute('PRAGMA busy_timeout=0');
    for (let round = 0; round < 5; round++) {
      const held = await other.transaction('write');
      const pending = ledger.write((tx) =>
        tx.execute({ sql: "INSERT INTO hop_counters (key_id, day, hops) VALUES ('after-lock', ?, 1)", args: [`2026-01-0${round + 1}`] }),
      );
      await new Promise((r) => setTimeout(r, 60));
      await held.commit();
      await pending;
    }
    const rs = await ledger.read.execute("SELECT COUNT(*) AS n FROM hop_counters WHERE key_id = 'after-lock'");
    expect(rs.rows[0]!.n).toBe(5);
    other.close();
    await ledger.close();
  });
});

describe('signing keys', () => {
  it('are generated once with mode 0600, with kid = RFC 7638 thumbprint, and rotation keeps old keys published', async () => {
    const dir = tempDir();
    const file = join(dir, 'keys.json');
    const ring = await loadKeyring({ SIGNING_KEY_FILE: file });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // RFC 7638: SHA-256 over the members crv, kty, x in lexicographic order, no whitespace.
    const { crv, kty, x } = ring.current.jwk;
    const thumb = createHash('sha256').update(JSON.stringify({ crv, kty, x })).digest('base64url');
    expect(ring.current.kid).toBe(thumb);
    expect((await loadKeyring({ SIGNING_KEY_FILE: file })).current.kid).toBe(thumb);

    const rotated = await rotateSigningKey(file);
    expect(rotated.current.kid).not.toBe(thumb);
    expect(rotated.byKid(thumb)?.retired_at).toBeTruthy();
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { keys: Array<{ private_jwk?: unknown }> };
    expect(stored.keys.filter((k) => k.private_jwk)).toHaveLength(1);
  });

  it('can come from SIGNING_KEY_JWK', async () => {
    const dir = tempDir();
    const donor = await loadKeyring({ SIGNING_KEY_FILE: join(dir, 'donor.json') });
    const jwk = JSON.parse(readFileSync(join(dir, 'donor.json'), 'utf8')).keys[0].private_jwk;
    const ring = await loadKeyring({ SIGNING_KEY_FILE: join(dir, 'none.json'), SIGNING_KEY_JWK: JSON.stringify(jwk) });
    expect(ring.current.kid).toBe(donor.current.kid);
  });
});

describe('HTTP foundation', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('serves the built site and the API from one port', async () => {
    const page = await s.fetch('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('etag')).toBeTruthy();
    const again = await s.fetch('/', { headers: { 'if-none-match': page.headers.get('etag')! } });
    expect(again.status).toBe(304);
    const health = await s.fetch('/health');
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', version: '1.0.0', database: 'ok' });
  });

  it('answers problem+json for unknown routes and wrong methods, with a request id', async () => {
    const r404 = await s.fetch('/no/such/thing');
    expect(r404.status).toBe(404);
    expect(r404.headers.get('content-type')).toBe('application/problem+json');
    expect(r404.headers.get('x-request-id')).toBeTruthy();
    expect(await r404.json()).toMatchObject({ status: 404, code: 'route_not_found', title: 'Not found' });
    const r405 = await s.fetch('/health', { method: 'DELETE' });
    expect(r405.status).toBe(405);
    expect(r405.headers.get('allow')).toBe('GET');
    expect((await r405.json()).code).toBe('method_not_allowed');
    const echoed = await s.fetch('/health', { headers: { 'x-request-id': 'trace-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('trace-123');
  });

  it('refuses missing, unknown and revoked keys with 401 and WWW-Authenticate', async () => {
    const none = await s.fetch('/v1/me');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await none.json()).code).toBe('missing_key');
    const unknown = await s.fetch('/v1/me', { key: 'fg_live_nope' });
    expect(unknown.status).toBe(401);
    expect((await unknown.json()).code).toBe('unknown_key');
  });

  it(
    'creates, uses and revokes keys through the CLI; /v1/me shows metadata and usage',
    async () => {
      const created = await cli(s.dir, ['keys', 'create', '--name', 'ci-agent', '--hop-limit', '7', '--json']);
      expect(created.code).toBe(0);
      const { id, key } = JSON.parse(created.stdout) as { id: string; key: string };
      expect(key).toMatch(/^fg_live_/);
      // The secret is not in the database in clear. (Read by another process: opening and
      // closing the file here would drop this process's SQLite POSIX locks.)
      for (const file of ['fusegate.db', 'fusegate.db-wal']) {
        const grep = await run('grep', ['-c', '--binary-files=text', key, join(s.dir, file)]);
        expect(grep.code).toBe(1);
      }

      const me = await s.fetch('/v1/me', { key });
      expect(me.status).toBe(200);
      const body = await me.json();
      expect(body).toMatchObject({ id, name: 'ci-agent', hop_limit: 7, usage: { hops_used: 0, hops_remaining: 7, total_usd: '0.00' } });
      expect(body.created_at).toMatch(/^\d{4}-\d\d-\d\dT/);

      const listed = await cli(s.dir, ['keys', 'list', '--json']);
      expect(JSON.parse(listed.stdout).keys.map((k: { id: string }) => k.id)).toContain(id);
      expect(listed.stdout.includes(key)).toBe(false);

      const clock = holdCacheClock(s);
      expect((await s.fetch('/v1/me', { key })).status).toBe(200);
      expect((await cli(s.dir, ['keys', 'revoke', id])).code).toBe(0);
      // The CLI is another process: the server answers from its key cache until AUTH_CACHE_MS has passed.
      expect((await s.fetch('/v1/me', { key })).status).toBe(200);
      clock.passBound();
      const revoked = await s.fetch('/v1/me', { key });
      clock.release();
      expect(revoked.status).toBe(401);
      expect((await revoked.json()).code).toBe('revoked_key');
      expect((await cli(s.dir, ['keys', 'revoke', 'key_missing'])).code).toBe(1);
      expect((await cli(s.dir, ['keys', 'create'])).code).toBe(2);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('publishes the current signing key as a JWK and raw base64', async () => {
    const r = await s.fetch('/crypto/public-key');
    const body = await r.json();
    expect(body.kid).toBe(s.ctx.keyring.current.kid);
    expect(Buffer.from(body.public_key_base64, 'base64').toString('base64url')).toBe(body.jwk.x);
  });
});

describe('health', () => {
  it('is 503 in production while BASE_URL or SITE_URL is localhost', async () => {
    const s = await startTestServer({ NODE_ENV: 'production' });
    try {
      const r = await s.fetch('/health');
      expect(r.status).toBe(503);
      expect((await r.json()).problems.join(' ')).toMatch(/localhost/);
    } finally {
      await s.stop();
    }
    const ok = await startTestServer({ NODE_ENV: 'production', BASE_URL: 'https://gate.example', SITE_URL: 'https://site.example' });
    try {
      expect((await ok.fetch('/health')).status).toBe(200);
    } finally {
      await ok.stop();
    }
  });

  it('is 503 when the database cannot be reached', async () => {
    const s = await startTestServer();
    try {
      s.ctx.ledger.read.close();
      const r = await s.fetch('/health');
      expect(r.status).toBe(503);
      expect((await r.json()).database).toBe('unreachable');
    } finally {
      await s.stop().catch(() => undefined);
    }
  });
});

describe('request bodies', () => {
  it('give 400 for malformed JSON, 413 past the limit, 415 for another type, and name bad fields', async () => {
    const dir = tempDir();
    const config = loadConfig(testEnv(dir, { MAX_BODY_BYTES: '64' }));
    const ledger = await openLedger(config);
    const ctx = { config, ledger, keyring: await loadKeyring(config), version: 't', log: () => undefined };
    const schema = z.object({ fuse_id: z.string().min(1) });
    const { h3 } = createApp(ctx, [
      (router) => router.on('POST', '/echo', async (event) => toResponse(reply(await readBody(event, schema, config.MAX_BODY_BYTES)))),
    ]);
    const post = (body: string, type = 'application/json') =>
      h3.request('/echo', { method: 'POST', body, headers: { 'content-type': type } });
    expect((await post('{"fuse_id":"f"}')).status).toBe(200);
    const malformed = await post('{"fuse_id":');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).code).toBe('malformed_json');
    const big = await post(JSON.stringify({ fuse_id: 'x'.repeat(100) }));
    expect(big.status).toBe(413);
    const wrongType = await post('fuse_id=f', 'application/x-www-form-urlencoded');
    expect(wrongType.status).toBe(415);
    const invalid = await post('{"fuse_id":""}');
    expect(invalid.status).toBe(400);
    const problem = await invalid.json();
    expect(problem.code).toBe('invalid_body');
    expect(problem.errors[0].field).toBe('fuse_id');
    await ledger.close();
  });
});

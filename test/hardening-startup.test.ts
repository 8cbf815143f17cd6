import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEALTH_REUSE_MS } from '../src/ledger/health-probe.ts';
import { PROCESS_TEST_TIMEOUT_MS, cleanEnv, run, runCli } from './support/cli.ts';
import { holdCacheClock, startTestServer, tempDir, testEnv, writesSettled, type TestServer } from './support/server.ts';

/** Starts the server in a process of its own, as `npm start` does, and resolves when it exits. */
const serve = (dir: string, env: Record<string, string>) =>
  run(process.execPath, ['src/server.ts'], { ...cleanEnv(), ...testEnv(dir), LOG_LEVEL: 'error', ...env });

describe('start-up failures: one line, exit 2', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'a-file'), 'x');
  writeFileSync(join(dir, 'not-a-db.db'), 'this is plain text, not a SQLite database, and it is long enough to have a header'.repeat(20));
  writeFileSync(join(dir, 'bad-keys.json'), 'garbage');
  writeFileSync(join(dir, 'wrong-keys.json'), '{"version":7}');

  it.each([
    ['a database path under a regular file', { DATABASE_URL: `file:${join(dir, 'a-file', 'x.db')}` }, /a-file is a file, not a directory/],
    ['a database under /proc/1 (no hang)', { DATABASE_URL: 'file:/proc/1/nope/x.db' }, /cannot create directory \/proc\/1\/nope/],
    [
      'a file that is not a database',
      { DATABASE_URL: `file:${join(dir, 'not-a-db.db')}` },
      /cannot open the database .*not-a-db\.db: .*not a database/,
    ],
    [
      'a key file that is not JSON',
      { SIGNING_KEY_FILE: join(dir, 'bad-keys.json') },
      /cannot load the signing keys .*bad-keys\.json.*: not valid JSON/,
    ],
    ['a key file of another kind', { SIGNING_KEY_FILE: join(dir, 'wrong-keys.json') }, /is not a Fuse Gate signing key file/],
  ])(
    '%s',
    async (_name, env, message) => {
      const r = await serve(dir, env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'the CLI says the same',
    async () => {
      const r = await runCli(['keys', 'list'], { ...testEnv(dir), DATABASE_URL: `file:${join(dir, 'a-file', 'x.db')}` });
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(/^fusegate: cannot create .*a-file is a file, not a directory$/);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('a write-locked database: /health tells the truth and OCSP halts fast', () => {
  let s: TestServer;
  let key: string;
  let fuseId: string;
  let clock: ReturnType<typeof holdCacheClock>;
  beforeAll(async () => {
    s = await startTestServer();
    // /health reuses its probes for a second of this clock: the test moves it on instead of waiting.
    clock = holdCacheClock(s);
    key = (await s.newKey('ocsp')).secret;
    fuseId = (await (await s.fetch('/v1/fuses', { json: {}, key })).json()).fuse_id;
  });
  afterAll(() => s.stop());

  it('reports database ok and answers OCSP while writes commit', async () => {
    const h = await s.fetch('/health');
    expect(h.status).toBe(200);
    expect(await h.json()).toMatchObject({ database: 'ok', database_write: 'ok' });
    expect((await s.fetch(`/v1/ocsp?fuse_id=${fuseId}`, { key })).status).toBe(200);
  });

  it('while another process holds the write lock: /health 503 read_only, OCSP 503 halt at its deadline, keyed', async () => {
    const hops = async () => (await (await s.fetch('/v1/me', { key })).json()).usage.hops_used as number;
    const hopsBefore = await hops();
    const other = createClient({ url: s.config.DATABASE_URL });
    const lock = await other.transaction('write');
    await lock.execute({
      sql: 'INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET probed_at = excluded.probed_at',
      args: ['locked'],
    });
    try {
      clock.passBound(HEALTH_REUSE_MS); // past the probe's reuse window
      const h = await s.fetch('/health');
      expect(h.status).toBe(503);
      expect(await h.json()).toMatchObject({ status: 'unavailable', database: 'read_only', database_write: 'failing' });
      // The contract says so too: a 503 of /health is the health document, not a problem.
      const doc = await (await s.fetch('/openapi.json')).json();
      expect(Object.keys(doc.paths['/health'].get.responses['503'].content)).toEqual([h.headers.get('content-type')!.split(';')[0]]);

      const r = await s.fetch(`/v1/ocsp?fuse_id=${fuseId}`, { key });
      expect(r.status).toBe(503);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await r.json()).toMatchObject({ code: 'halt', halt: true, fuse_id: fuseId });
    } finally {
      await lock.rollback();
      other.close();
    }
    // The halt came from the deadline (OCSP_HALT_AFTER_MS), not from the write queue giving up: the lookup's
    // write was still queued, and counts its hop once the lock is released.
    await writesSettled(s.ctx.ledger);
    expect(await hops()).toBe(hopsBefore + 1);
    clock.passBound(HEALTH_REUSE_MS);
    expect((await s.fetch('/health')).status).toBe(200);
  }, 30_000);
});

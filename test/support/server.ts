/**
 * A real server on an ephemeral port with a temporary libSQL file and key
 * file, for HTTP tests. Nothing is mocked.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.ts';
import { createApiKey, type KeyRole } from '../../src/ledger/api-keys.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { inject } from 'vitest';

export interface TestServer extends RunningServer {
  dir: string;
  config: Config;
  /** Creates an API key through the real ledger code; returns its secret. */
  /** Without `accountId` the key gets an account of its own. */
  newKey(name?: string, hopLimit?: number, role?: KeyRole, accountId?: string): Promise<{ id: string; secret: string; accountId: string }>;
  /** fetch relative to the server, with an optional bearer key. */
  fetch(path: string, init?: RequestInit & { key?: string; json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

const made: string[] = [];

/** A new folder under the system's temporary one, removed when the test file ends (test/support/cleanup.ts). */
export function tempDir(prefix = 'fusegate-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Removes every folder tempDir made in this test file. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** The engine this test run's ledgers use: `postgres` in the vitest project of that name (vitest.config.ts), else the embedded file. */
export const TEST_ENGINE: 'embedded' | 'postgres' = process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'embedded';

/**
 * A fresh PostgreSQL database on the run's test cluster (test/support/postgres-setup.ts),
 * copied from the migrated template: its URL.
 */
export function freshPostgresDatabase(): string {
  const port = inject('postgresPort');
  const name = `fg_${randomBytes(6).toString('hex')}`;
  execFileSync(
    'psql',
    [
      '-X',
      '-q',
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-c',
      `CREATE DATABASE ${name} TEMPLATE fusegate_template`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return `postgres://postgres@127.0.0.1:${port}/${name}`;
}

const databaseOfDir = new Map<string, string>();

/**
 * The URL of the database of the run's engine that belongs to `dir`: the file
 * `fusegate.db` in it, or on PostgreSQL a fresh database made for the first
 * call with that folder. So servers started on one folder (a restart, a second
 * process) share one database on both engines.
 */
export function testDatabaseUrl(dir: string): string {
  if (TEST_ENGINE === 'embedded') return `file:${join(dir, 'fusegate.db')}`;
  let url = databaseOfDir.get(dir);
  if (!url) databaseOfDir.set(dir, (url = freshPostgresDatabase()));
  return url;
}

export function testEnv(dir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: env.DATABASE_URL ?? testDatabaseUrl(dir),
    SIGNING_KEY_FILE: join(dir, 'signing-keys.json'),
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    STATIC_DIR: join(process.cwd(), 'dist/client'),
    ...env,
  };
}

export async function startTestServer(env: Record<string, string> = {}, dir = tempDir()): Promise<TestServer> {
  const running = await startServer(loadConfig(testEnv(dir, env)));
  return {
    ...running,
    dir,
    // The configuration the server runs with (PORT 0 resolved to the port it listens on).
    config: running.ctx.config,
    async newKey(name = 'test', hopLimit = running.ctx.config.HOP_LIMIT_DEFAULT, role: KeyRole = 'operator', accountId?: string) {
      const c = running.ctx.config;
      const { key, secret } = await createApiKey(running.ctx.ledger, {
        name,
        hopLimit,
        role,
        hopPeriod: c.HOP_LIMIT_PERIOD,
        ...(accountId ? { accountId } : {}),
      });
      return { id: key.id, secret, accountId: key.account_id };
    },
    fetch(path, init = {}) {
      const { key, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key) headers.set('authorization', `Bearer ${key}`);
      if (json !== undefined) headers.set('content-type', 'application/json');
      return fetch(running.url + path, {
        ...rest,
        headers,
        ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
      });
    },
    async stop() {
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Holds still the clock the server's read caches measure their bounds on
 * (AppContext.cacheClock): an answer they hold stays fresh however long the
 * test takes, until `passBound()` moves that clock past AUTH_CACHE_MS (or
 * `ms`), as if the time had passed; `release()` gives the caches the real clock
 * back. So a test of a bound neither waits for it nor races it.
 */
export function holdCacheClock(s: TestServer): { passBound(ms?: number): void; release(): void } {
  let now = Date.now();
  s.ctx.cacheClock = () => now;
  return {
    passBound: (ms = s.config.AUTH_CACHE_MS + 1) => void (now += ms),
    release: () => void delete s.ctx.cacheClock,
  };
}

/** Returns once every write queued on `ledger` so far has committed: its queue is first in, first out (this is one more commit). */
export const writesSettled = (ledger: { write(fn: () => Promise<void>): Promise<void> }): Promise<void> =>
  ledger.write(async () => undefined);

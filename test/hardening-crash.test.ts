/**
 * What holds today and must keep holding: a kill -9 in the middle of load
 * loses no acknowledged receipt and leaves the log gapless; two processes on
 * one database file never overspend a key nor fork the log. Real servers,
 * spawned as child processes on a temporary file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { createApiKey } from '../src/ledger/api-keys.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { tempDir, testEnv } from './support/server.ts';

function cleanEnv(): Record<string, string> {
  const { BASE_URL: _b, SITE_URL: _s, ...rest } = process.env;
  return rest as Record<string, string>;
}

interface Child {
  proc: ChildProcess;
  url: string;
}

/** Spawns `node src/server.ts` on `dir`'s database; resolves with its URL once it listens. */
function serve(dir: string, env: Record<string, string> = {}): Promise<Child> {
  const proc = spawn(process.execPath, ['src/server.ts'], {
    env: { ...cleanEnv(), ...testEnv(dir), LOG_LEVEL: 'info', WEBHOOK_POLL_MS: '60000', CLEARING_INTERVAL_HOURS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    proc.stderr!.on('data', (d) => (err += d));
    proc.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve({ proc, url: JSON.parse(line).url as string });
    });
    proc.once('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

async function stopped(c: Child, signal: NodeJS.Signals): Promise<void> {
  const exit = new Promise((r) => c.proc.once('exit', r));
  c.proc.kill(signal);
  await exit;
}

async function withLedger<T>(dir: string, f: (l: Ledger) => Promise<T>): Promise<T> {
  const ledger = await openLedger(loadConfig(testEnv(dir)));
  try {
    return await f(ledger);
  } finally {
    await ledger.close();
  }
}

/** The receipts log: every receipt has an index, the indexes are 0..n-1, and every leaf and leaf hash is stored. */
async function expectGapless(l: Ledger): Promise<number> {
  const size = Number((await l.read.execute("SELECT size FROM logs WHERE name = 'receipts'")).rows[0]!.size);
  const receipts = await l.read.execute('SELECT COUNT(*) AS n, COUNT(DISTINCT log_index) AS d, MIN(log_index) AS lo, MAX(log_index) AS hi, SUM(log_index IS NULL) AS unindexed FROM receipts');
  const r = receipts.rows[0]!;
  expect(Number(r.n)).toBe(size);
  expect(Number(r.d)).toBe(size);
  expect(Number(r.unindexed ?? 0)).toBe(0);
  if (size > 0) expect([Number(r.lo), Number(r.hi)]).toEqual([0, size - 1]);
  const entries = await l.read.execute("SELECT COUNT(*) AS n, MAX(idx) AS hi FROM log_entries WHERE log = 'receipts'");
  expect(Number(entries.rows[0]!.n)).toBe(size);
  const leaves = await l.read.execute("SELECT COUNT(*) AS n FROM log_nodes WHERE log = 'receipts' AND level = 0");
  expect(Number(leaves.rows[0]!.n)).toBe(size);
  return size;
}

const dirs: string[] = [];
const children: Child[] = [];
afterAll(() => {
  for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('kill -9 mid-load', () => {
  it('loses no acknowledged receipt and leaves the log gapless; the restarted server goes on from there', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const secret = await withLedger(dir, async (l) => (await createApiKey(l, { name: 'load', hopLimit: 1_000_000 })).secret);
    let server = await serve(dir);
    children.push(server);
    const post = (url: string, path: string, json: unknown) =>
      fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
    const fuse = await (await post(server.url, '/v1/fuses', {})).json();

    const acknowledged: string[] = [];
    let stop = false;
    const worker = async () => {
      while (!stop) {
        try {
          const r = await post(server.url, '/v1/fuse/hop', { fuse_id: fuse.fuse_id, action: { kind: 'pay' } });
          if (r.status === 200) acknowledged.push((await r.json()).receipt_id);
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 10));
    await stopped(server, 'SIGKILL');
    stop = true;
    await Promise.all(workers);
    expect(acknowledged.length).toBeGreaterThanOrEqual(200);

    const size = await withLedger(dir, async (l) => {
      const ids = new Set((await l.read.execute('SELECT id FROM receipts')).rows.map((r) => String(r.id)));
      expect(acknowledged.filter((id) => !ids.has(id))).toEqual([]);
      return expectGapless(l);
    });

    server = await serve(dir);
    children.push(server);
    const after = await post(server.url, '/v1/fuse/hop', { fuse_id: fuse.fuse_id, action: { kind: 'pay' } });
    expect(after.status).toBe(200);
    await stopped(server, 'SIGTERM');
    await withLedger(dir, async (l) => expect(await expectGapless(l)).toBe(size + 1));
  }, 90_000);
});

describe('two processes on one database file', () => {
  it('share a key’s hop limit exactly and append to one gapless log', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const limit = 60;
    const secret = await withLedger(dir, async (l) => (await createApiKey(l, { name: 'shared', hopLimit: limit + 1 })).secret);
    const a = await serve(dir);
    children.push(a);
    const b = await serve(dir);
    children.push(b);
    const post = (url: string, path: string, json: unknown) =>
      fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
    const fuse = await (await post(a.url, '/v1/fuses', {})).json();
    const answers = await Promise.all(
      Array.from({ length: 2 * limit }, (_, i) => post(i % 2 ? a.url : b.url, '/v1/fuse/hop', { fuse_id: fuse.fuse_id }).then(async (r) => ({ status: r.status, body: await r.json() }))),
    );
    const ok = answers.filter((x) => x.status === 200);
    expect(answers.filter((x) => x.status >= 500)).toEqual([]);
    expect(answers.every((x) => x.status === 200 || x.status === 402)).toBe(true);
    expect(answers.some((x) => x.status === 402)).toBe(true);
    await stopped(a, 'SIGTERM');
    await stopped(b, 'SIGTERM');
    await withLedger(dir, async (l) => {
      const used = Number((await l.read.execute('SELECT hops_used FROM api_keys')).rows[0]!.hops_used);
      expect(used).toBeLessThanOrEqual(limit + 1);
      expect(ok.length).toBe(used);
      const ids = new Set((await l.read.execute('SELECT id FROM receipts')).rows.map((r) => String(r.id)));
      expect(ok.every((x) => ids.has(x.body.receipt_id))).toBe(true);
      await expectGapless(l);
    });
  }, 90_000);
});

describe('one winner over two processes', () => {
  it('100 concurrent fires of one trigger through two servers: exactly one fires, the rest are refused', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const secret = await withLedger(dir, async (l) => (await createApiKey(l, { name: 'fires', hopLimit: 1_000_000 })).secret);
    const a = await serve(dir);
    children.push(a);
    const b = await serve(dir);
    children.push(b);
    const post = (url: string, path: string, json: unknown) =>
      fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
    const published = await post(a.url, '/signal/trigger/publish', { template_id: 'bind_gate_hold', threshold: { metric: 'holds', operator: 'gte', value: '1' } });
    expect(published.status).toBe(201);
    const { trigger_id } = await published.json();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => post(i % 2 ? a.url : b.url, '/api/v1/foundry/trigger/fire', { trigger_id, reading: '2' }).then(async (r) => ({ status: r.status, body: await r.json() }))),
    );
    expect(answers.filter((x) => x.status >= 500)).toEqual([]);
    const fired = answers.filter((x) => x.status === 200 && x.body.fired === true);
    expect(fired).toHaveLength(1);
    expect(answers.filter((x) => x.status === 409).every((x) => x.body.code === 'trigger_already_fired')).toBe(true);
    expect(answers.filter((x) => x.status === 409)).toHaveLength(99);
    await stopped(a, 'SIGTERM');
    await stopped(b, 'SIGTERM');
    await withLedger(dir, async (l) => {
      const fires = await l.read.execute("SELECT COUNT(*) AS n FROM meter WHERE sku = 'bps_fire'");
      expect(Number(fires.rows[0]!.n)).toBe(1);
      await expectGapless(l);
    });
  }, 90_000);
});

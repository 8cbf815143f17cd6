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
import { createApiKey, listApiKeys } from '../src/ledger/api-keys.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import { tempDir, testEnv } from './support/server.ts';
import { leafHash, rootOf } from '../src/crypto/merkle.ts';
import { logSize, readEntries, treeHead } from '../src/ledger/log.ts';
import { usage } from '../src/ledger/meter.ts';
import { RECEIPTS_LOG, receiptIndex } from '../src/ledger/receipts.ts';
import { allReceipts, chargesOf } from './support/ledger-reads.ts';

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

/**
 * The receipts log after a restart: entries 0..n-1, each receipt's id naming
 * its own index; the root of the tiles is the root of the entries and the
 * newest seal signs that size; every key's usage counters are the sums of the
 * charges its receipts state. A crash between batches leaves nothing half-written.
 */
async function expectGapless(l: Ledger): Promise<number> {
  const size = await logSize(l.read, RECEIPTS_LOG);
  const receipts = await allReceipts(l.read);
  expect(receipts.map((r) => r.log_index)).toEqual(Array.from({ length: size }, (_, i) => i));
  expect(receipts.filter((r) => receiptIndex(r.receipt_id) !== r.log_index)).toEqual([]);
  if (size > 0) {
    const head = await treeHead(l.read, RECEIPTS_LOG);
    const leaves = (await readEntries(l.read, RECEIPTS_LOG, 0, size)).map((e) => leafHash(e.leaf));
    expect(Buffer.from(head.root).equals(Buffer.from(rootOf(leaves)))).toBe(true);
    const sealed = Number((await l.read.execute('SELECT MAX(tree_size) AS n FROM receipt_seals')).rows[0]!.n);
    expect(sealed).toBe(size);
  }
  const charged = new Map<string, bigint>();
  for (const r of receipts)
    for (const c of r.payload.charges ?? [])
      charged.set(r.payload.key_id!, (charged.get(r.payload.key_id!) ?? 0n) + BigInt(c.amount_micros));
  for (const [keyId, micros] of charged) expect((await usage(l.read, keyId)).total_micros).toBe(micros);
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
      fetch(url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
    const fuse = await (await post(server.url, '/v1/fuses', {})).json();

    const acknowledged: string[] = [];
    let stop = false;
    let twoHundredAcknowledged!: () => void;
    const twoHundred = new Promise<void>((resolve) => (twoHundredAcknowledged = resolve));
    const worker = async () => {
      while (!stop) {
        try {
          const r = await post(server.url, '/v1/fuse/hop', { fuse_id: fuse.fuse_id, action: { kind: 'pay' } });
          if (r.status === 200 && acknowledged.push((await r.json()).receipt_id) === 200) twoHundredAcknowledged();
        } catch {
          return; // the server is gone
        }
      }
    };
    const workers = Array.from({ length: 16 }, worker);
    await twoHundred;
    await stopped(server, 'SIGKILL');
    stop = true;
    await Promise.all(workers);
    expect(acknowledged.length).toBeGreaterThanOrEqual(200);

    const size = await withLedger(dir, async (l) => {
      const ids = new Set((await allReceipts(l.read)).map((r) => r.receipt_id));
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
      fetch(url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
    const fuse = await (await post(a.url, '/v1/fuses', {})).json();
    const answers = await Promise.all(
      Array.from({ length: 2 * limit }, (_, i) =>
        post(i % 2 ? a.url : b.url, '/v1/fuse/hop', { fuse_id: fuse.fuse_id }).then(async (r) => ({
          status: r.status,
          body: await r.json(),
        })),
      ),
    );
    const ok = answers.filter((x) => x.status === 200);
    expect(answers.filter((x) => x.status >= 500)).toEqual([]);
    expect(answers.every((x) => x.status === 200 || x.status === 402)).toBe(true);
    expect(answers.some((x) => x.status === 402)).toBe(true);
    await stopped(a, 'SIGTERM');
    await stopped(b, 'SIGTERM');
    await withLedger(dir, async (l) => {
      const used = (await listApiKeys(l.read))[0]!.hops_used;
      expect(used).toBeLessThanOrEqual(limit + 1);
      expect(ok.length).toBe(used);
      const ids = new Set((await allReceipts(l.read)).map((r) => r.receipt_id));
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
      fetch(url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      });
    const published = await post(a.url, '/signal/trigger/publish', {
      template_id: 'bind_gate_hold',
      threshold: { metric: 'holds', operator: 'gte', value: '1' },
    });
    expect(published.status).toBe(201);
    const { trigger_id } = await published.json();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        post(i % 2 ? a.url : b.url, '/api/v1/foundry/trigger/fire', { trigger_id, reading: '2' }).then(async (r) => ({
          status: r.status,
          body: await r.json(),
        })),
      ),
    );
    expect(answers.filter((x) => x.status >= 500)).toEqual([]);
    const fired = answers.filter((x) => x.status === 200 && x.body.fired === true);
    expect(fired).toHaveLength(1);
    expect(answers.filter((x) => x.status === 409).every((x) => x.body.code === 'trigger_already_fired')).toBe(true);
    expect(answers.filter((x) => x.status === 409)).toHaveLength(99);
    await stopped(a, 'SIGTERM');
    await stopped(b, 'SIGTERM');
    await withLedger(dir, async (l) => {
      expect((await chargesOf(l.read)).filter((c) => c.sku === 'bps_fire')).toHaveLength(1);
      await expectGapless(l);
    });
  }, 90_000);
});

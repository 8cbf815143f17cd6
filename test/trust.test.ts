import { spawn } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compactVerify, importJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { loadKeyring, rotateSigningKey } from '../src/crypto/keys.ts';
import { leafHash, rootOf, verifyConsistency, verifyInclusion } from '../src/crypto/merkle.ts';
import { openNote, parseCheckpointText, parseVerifierKey } from '../src/crypto/note.ts';
import { openLedger } from '../src/ledger/db.ts';
import { appendLeaf, readEntries, treeHead } from '../src/ledger/log.ts';
import { commitReceipts } from './support/receipts.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';
import { PROCESS_TEST_TIMEOUT_MS } from './support/cli.ts';

const VECTORS = fileURLToPath(new URL('./vectors/', import.meta.url));
const b64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/** Independent check of a C2SP signed note: recompute the key hash and verify with node:crypto. */
function independentlyVerifyNote(note: string, vkey: string): boolean {
  const [name, hashHex] = vkey.split('+');
  const keyBytes = Buffer.from(vkey.slice(name!.length + hashHex!.length + 2), 'base64');
  const raw = keyBytes.subarray(1);
  const hash = createHash('sha256')
    .update(Buffer.concat([Buffer.from(name + '\n'), Buffer.from([1]), raw]))
    .digest()
    .subarray(0, 4);
  if (hash.toString('hex') !== hashHex) return false;
  const [text, sigs] = note.split('\n\n');
  const line = sigs!
    .trim()
    .split('\n')
    .find((l) => l.startsWith(`\u2014 ${name} `))!;
  const blob = Buffer.from(line.split(' ')[2]!, 'base64');
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
  return verify(null, Buffer.from(text + '\n'), createPublicKey({ key: spki, format: 'der', type: 'spki' }), blob.subarray(4));
}

describe('signed notes', () => {
  const vectors = JSON.parse(readFileSync(join(VECTORS, 'signed-note-vectors.json'), 'utf8')).vectors as Array<Record<string, string>>;
  it('open the published C2SP and Go sumdb/note vectors', async () => {
    const valid = vectors.filter((v) => v.expect === 'valid');
    expect(valid.length).toBeGreaterThanOrEqual(3);
    for (const v of valid) expect(await openNote(v.note!, v.vkey!)).toBe(v.note!.slice(0, v.note!.lastIndexOf('\n\n') + 1));
    for (const v of vectors.filter((x) => x.expect?.startsWith('reject vkey'))) expect(() => parseVerifierKey(v.vkey!)).toThrow();
    const tree = vectors.find((v) => v.text);
    expect(parseCheckpointText(tree!.text!).size).toBe(123456789012);
  });

  it('reject a note whose text was changed', async () => {
    const v = vectors.find((x) => x.expect === 'valid')!;
    await expect(openNote(v.note!.replace('example', 'exampel'), v.vkey!)).rejects.toThrow();
  });
});

describe('log engine', () => {
  it('gives 200 concurrent appends 200 distinct consecutive indexes and the right root', async () => {
    const ledger = await openLedger(loadConfig(testEnv(tempDir())));
    const leaves = Array.from({ length: 200 }, (_, i) => new TextEncoder().encode(`leaf ${i}`));
    const results = await Promise.all(leaves.map((leaf) => ledger.write((tx) => appendLeaf(tx, 'astl', leaf))));
    const indexes = results.map((r) => r.index).sort((a, b) => a - b);
    expect(indexes).toEqual(Array.from({ length: 200 }, (_, i) => i));
    // The stored head equals a from-scratch root over the leaves in index order.
    const byIndex = new Map(results.map((r, i) => [r.index, leaves[i]!]));
    const expected = rootOf(indexes.map((i) => leafHash(byIndex.get(i)!)));
    const head = await treeHead(ledger.read, 'astl');
    expect(Buffer.from(head.root)).toEqual(Buffer.from(expected));
    for (const size of [1, 2, 3, 64, 127, 199]) {
      const h = await treeHead(ledger.read, 'astl', size);
      expect(Buffer.from(h.root)).toEqual(Buffer.from(rootOf(indexes.slice(0, size).map((i) => leafHash(byIndex.get(i)!)))));
    }
    await ledger.close();
  });

  it(
    'keeps indexes gap-free when two processes append to one database',
    async () => {
      const dir = tempDir();
      const env = testEnv(dir);
      (await openLedger(loadConfig(env))).close();
      const script = `
      import { loadConfig } from './src/config.ts';
      import { openLedger } from './src/ledger/db.ts';
      import { appendLeaf } from './src/ledger/log.ts';
      const ledger = await openLedger(loadConfig(process.env));
      await Promise.all(Array.from({ length: 100 }, (_, i) =>
        ledger.write((tx) => appendLeaf(tx, 'triggers', new TextEncoder().encode(process.argv[1] + i)))));
      await ledger.close();`;
      let stderr = '';
      const run = (tag: string, flags: string[] = []) =>
        new Promise<number | null>((resolve) => {
          const { BASE_URL: _b, ...parent } = process.env;
          const child = spawn(process.execPath, [...flags, '--input-type=module', '-e', script, tag], {
            env: { ...parent, ...env },
            stdio: ['ignore', 'inherit', 'pipe'],
          });
          child.stderr.on('data', (d) => (stderr += String(d)));
          child.on('exit', resolve);
        });
      expect(await Promise.all([run('a'), run('b', ['--max-old-space-size=512', '--max-semi-space-size=32'])])).toEqual([0, 0]);
      // Each process's checkpointer thread started, although the processes were started with --input-type and V8 flags.
      expect(stderr).not.toMatch(/checkpoint failed/);
      const ledger = await openLedger(loadConfig(env));
      const entries = await readEntries(ledger.read, 'triggers', 0, 1000);
      expect(entries.map((e) => e.index)).toEqual(Array.from({ length: 200 }, (_, i) => i));
      expect((await treeHead(ledger.read, 'triggers')).size).toBe(200);
      await ledger.close();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('log and receipt HTTP API', () => {
  let s: TestServer;
  const receipts: Array<{ id: string; jws: string }> = [];
  beforeAll(async () => {
    s = await startTestServer();
    for (let i = 0; i < 5; i++) {
      const [r] = await commitReceipts(s.ctx.ledger, s.ctx, [{ kind: 'test', decision: i % 2 ? 'DENY' : 'PERMIT', subject: `fuse_${i}` }], {
        signed: true,
      });
      receipts.push({ id: r!.receipt_id, jws: r!.jws! });
    }
  });
  afterAll(() => s.stop());

  it('describes every log and serves a checkpoint that an independent verifier accepts', async () => {
    const list = await (await s.fetch('/api/v1/logs')).json();
    expect(list.logs.map((l: { name: string }) => l.name).sort()).toEqual(['astl', 'clearing', 'receipts', 'receipts-test', 'triggers']);
    const info = await (await s.fetch('/api/v1/logs/receipts')).json();
    expect(info).toMatchObject({ name: 'receipts', origin: `${new URL(s.ctx.config.SITE_URL).host}/receipts`, tree_size: 5 });
    const res = await s.fetch('/api/v1/logs/receipts/checkpoint');
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const note = await res.text();
    expect(independentlyVerifyNote(note, info.verifier_key)).toBe(true);
    expect(await openNote(note, info.verifier_key)).toBe(`${info.origin}\n5\n${info.root_hash}\n`);
    expect(independentlyVerifyNote(note.replace('\n5\n', '\n6\n'), info.verifier_key)).toBe(false);
  });

  it('serves entries and proofs that verify against the checkpoint', async () => {
    const info = await (await s.fetch('/api/v1/logs/receipts')).json();
    const entries = await (await s.fetch('/api/v1/logs/receipts/entries?start=1&limit=2')).json();
    expect(entries.entries.map((e: { index: number }) => e.index)).toEqual([1, 2]);
    expect(Buffer.from(entries.entries[0].leaf, 'base64').toString()).toBe(receipts[1]!.jws);
    expect(entries.entries[0].payload.receipt_id).toBe(receipts[1]!.id);
    const p = await (await s.fetch('/api/v1/logs/receipts/proof/inclusion?index=3&tree_size=5')).json();
    verifyInclusion(3, 5, leafHash(Buffer.from(receipts[3]!.jws)), p.hashes.map(b64), b64(info.root_hash));
    const old = await (await s.fetch('/api/v1/logs/receipts/proof/inclusion?index=0&tree_size=3')).json();
    expect(old.hashes).toHaveLength(2);
    const c = await (await s.fetch('/api/v1/logs/receipts/proof/consistency?from=3&to=5')).json();
    const root3 = rootOf(receipts.slice(0, 3).map((r) => leafHash(Buffer.from(r.jws))));
    verifyConsistency(3, 5, c.hashes.map(b64), root3, b64(info.root_hash));
  });

  it('refuses bad parameters with 400 and unknown logs with 404', async () => {
    for (const q of ['index=5&tree_size=5', 'index=-1&tree_size=5', 'index=a&tree_size=5', 'index=0&tree_size=99', 'index=0']) {
      const r = await s.fetch(`/api/v1/logs/receipts/proof/inclusion?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.headers.get('content-type')).toBe('application/problem+json');
    }
    expect((await s.fetch('/api/v1/logs/receipts/proof/consistency?from=4&to=2')).status).toBe(400);
    expect((await s.fetch('/api/v1/logs/receipts/proof/consistency?from=0&to=2')).status).toBe(400);
    expect((await s.fetch('/api/v1/logs/nope')).status).toBe(404);
  });

  it('gives each receipt a verify_url with evidence a stranger can check, and an HTML page', async () => {
    const { id, jws } = receipts[2]!;
    const e = await (await s.fetch(`/v1/receipts/${id}`, { headers: { accept: 'application/json' } })).json();
    expect(e.verification).toEqual({ signature: true, inclusion: true });
    expect(e.log.index).toBe(2);
    // Signature by a second implementation (jose over the published JWK), inclusion by our pure math.
    const pub = await (await s.fetch('/crypto/public-key')).json();
    const { payload } = await compactVerify(jws, await importJWK(pub.jwk, 'EdDSA'));
    expect(JSON.parse(new TextDecoder().decode(payload)).receipt_id).toBe(id);
    const cp = parseCheckpointText(await openNote(e.checkpoint, e.log.verifier_key));
    verifyInclusion(e.log.index, cp.size, leafHash(Buffer.from(jws)), e.inclusion.hashes.map(b64), cp.root);
    const page = await s.fetch(`/v1/receipts/${id}`, { headers: { accept: 'text/html' } });
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/signature verifies and it is included/);
    expect((await s.fetch('/v1/receipts/rcpt_missing')).status).toBe(404);
  });

  it('verifies receipts publicly and says why a tampered one fails', async () => {
    const { jws } = receipts[0]!;
    const ok = await (await s.fetch('/v1/receipts/verify', { json: { receipt: jws } })).json();
    expect(ok).toMatchObject({ valid: true, in_log: true, log_index: 0 });
    const [h, p, sig] = jws.split('.');
    const forgedPayload = Buffer.from(Buffer.from(p!, 'base64url').toString().replace('PERMIT', 'DENY!!')).toString('base64url');
    const bad = await (await s.fetch('/v1/receipts/verify', { json: { receipt: `${h}.${forgedPayload}.${sig}` } })).json();
    expect(bad).toMatchObject({ valid: false, reason: 'bad_signature' });
    const noneAlg = Buffer.from(JSON.stringify({ alg: 'none', typ: 'fusegate-receipt+jws' })).toString('base64url');
    expect((await (await s.fetch('/v1/receipts/verify', { json: { receipt: `${noneAlg}.${p}.` } })).json()).reason).toBe('bad_alg');
    expect((await s.fetch('/v1/receipts/verify', { json: { receipt: 42 } })).status).toBe(400);
  });

  it('keeps old receipts and checkpoints verifiable after a key rotation', async () => {
    const info = await (await s.fetch('/api/v1/logs/receipts')).json();
    const oldNote = await (await s.fetch('/api/v1/logs/receipts/checkpoint')).text();
    await rotateSigningKey(s.config.SIGNING_KEY_FILE);
    s.ctx.keyring = await loadKeyring(s.config);
    const after = await (await s.fetch('/api/v1/logs/receipts')).json();
    expect(after.verifier_key).not.toBe(info.verifier_key);
    expect(after.verifier_keys).toContain(info.verifier_key);
    expect(independentlyVerifyNote(oldNote, info.verifier_key)).toBe(true);
    const ok = await (await s.fetch('/v1/receipts/verify', { json: { receipt: receipts[1]!.jws } })).json();
    expect(ok.valid).toBe(true);
    const newNote = await (await s.fetch('/api/v1/logs/receipts/checkpoint')).text();
    expect(independentlyVerifyNote(newNote, after.verifier_key)).toBe(true);
  });
});

/**
 * The typed client drives the gate; the `verify` CLI (a separate process, with
 * jose and node:crypto rather than the server's code path) checks what the
 * service published, online and offline, and refuses tampered evidence.
 */
import { spawn } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FuseGateClient, FuseGateError } from '../src/client.ts';
import { canonicalJson } from '../src/crypto/canonical.ts';
import { signNote, verifierKey } from '../src/crypto/note.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';

/** Runs the CLI as its own process; async, because the server under test lives in this process. */
function cli(args: string[]): Promise<{ code: number | null; out?: Record<string, any>; stderr: string }> {
  const { BASE_URL: _b, SITE_URL: _s, ...env } = process.env;
  const child = spawn(process.execPath, ['src/cli.ts', ...args, '--json'], { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ code, stderr, ...(stdout ? { out: JSON.parse(stdout) as Record<string, any> } : {}) })),
  );
}

describe('typed client and verify CLI', () => {
  let s: TestServer;
  let gate: FuseGateClient;
  let logKey: string;
  let secret: string;
  beforeAll(async () => {
    s = await startTestServer();
    secret = (await s.newKey('client')).secret;
    gate = new FuseGateClient({ baseUrl: s.url, apiKey: secret });
    logKey = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_key: string }).verifier_key;
  });
  afterAll(() => s.stop());

  it('hops, acts and reads through the client; problems throw FuseGateError', async () => {
    const fuse = await gate.createFuse();
    expect(fuse.state).toBe('LIVE');
    const hop = await gate.hop({ fuse_id: fuse.fuse_id, action: { kind: 'pay' } }, { idempotencyKey: 'client-1' });
    expect([hop.verdict, hop.decision]).toEqual([true, 'PERMIT']);
    const again = await gate.hop({ fuse_id: fuse.fuse_id, action: { kind: 'pay' } }, { idempotencyKey: 'client-1' });
    expect(again.receipt_id).toBe(hop.receipt_id);
    await gate.blowFuse(fuse.fuse_id);
    const act = await gate.act({ fuse_id: fuse.fuse_id, action: { kind: 'pay' } });
    expect([act.acted, act.decision]).toEqual([false, 'DENY']);
    expect((await gate.verifyReceipt(await gate.receipt(act.receipt_id))).valid).toBe(true);
    const err = await gate.lookup('fuse_nope').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FuseGateError);
    expect((err as FuseGateError).problem.code).toBe('unknown_fuse');
  });

  it(
    'proves a test receipt against the test log only and says so; a receipt claiming the other log fails',
    async () => {
      const made = await s.fetch('/v1/keys', { key: secret, json: { name: 'trial', role: 'operator', mode: 'test' } });
      const testGate = new FuseGateClient({ baseUrl: s.url, apiKey: ((await made.json()) as { secret: string }).secret });
      const fuse = await testGate.createFuse();
      const hop = await testGate.hop({ fuse_id: fuse.fuse_id });
      expect(hop.receipt_id).toMatch(/^rcpt_test_/);
      const testLogKey = ((await (await s.fetch('/api/v1/logs/receipts-test')).json()) as { verifier_key: string }).verifier_key;
      const url = `${s.url}/v1/receipts/${hop.receipt_id}`;
      const jwks = join(s.dir, 'jwks-test.json');
      writeFileSync(jwks, await (await s.fetch('/.well-known/prefinality-jwks.json')).text());

      // A one-entry log of our own, named as the live receipts log, whose entry claims to be a test receipt:
      // every proof holds, and the claim does not fit the log.
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      const raw = new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(-32));
      const origin = 'log.invalid/receipts';
      const payload = { ...((await testGate.receipt(hop.receipt_id)) as Record<string, any>).payload } as Record<string, unknown>;
      const leaf = canonicalJson(payload);
      const hash = createHash('sha256')
        .update(Buffer.concat([Buffer.from([0]), Buffer.from(leaf)]))
        .digest('base64');
      const signer = { raw, sign: (m: Uint8Array) => new Uint8Array(sign(null, m, privateKey)) };
      const wrong = join(s.dir, 'wrong-log.json');
      writeFileSync(
        wrong,
        JSON.stringify({
          leaf,
          receipt: null,
          payload,
          log: { name: 'receipts', index: 0, origin, verifier_key: verifierKey(origin, raw) },
          inclusion: { tree_size: 1, leaf_hash: hash, hashes: [] },
          checkpoint: signNote(`${origin}\n1\n${hash}\n`, origin, signer),
        }),
      );

      const [asTest, asLive, claimed, human] = await Promise.all([
        cli(['verify', 'receipt', url, '--log-key', testLogKey]),
        cli(['verify', 'receipt', url, '--log-key', logKey]),
        cli(['verify', 'receipt', wrong, '--jwks', jwks, '--log-key', verifierKey(origin, raw)]),
        runCli(['verify', 'receipt', url, '--log-key', testLogKey]),
      ]);
      expect(asTest.code, asTest.stderr).toBe(0);
      expect(asTest.out).toMatchObject({ verified: true, test: true, checks: { live_or_test: { ok: true } } });
      expect(asTest.out!.checks.live_or_test.detail).toContain('TEST receipt');
      expect(human.stdout).toContain('ok   live_or_test: a TEST receipt');
      // Against the live log's key it is not proven.
      expect(asLive.code).toBe(1);
      expect(asLive.out).toMatchObject({ verified: false, checks: { checkpoint: { ok: false }, live_or_test: { ok: false } } });
      // Every proof holds, but a test receipt in a log named as the live one is refused.
      expect(claimed.code).toBe(1);
      expect(claimed.out).toMatchObject({
        verified: false,
        checks: { checkpoint: { ok: true }, inclusion: { ok: true }, leaf: { ok: true }, live_or_test: { ok: false } },
      });
      expect(claimed.out!.checks.live_or_test.detail).toContain('test log only');
      // A live receipt, for its part, verifies as one.
      const live = await gate.hop({ fuse_id: (await gate.createFuse()).fuse_id });
      const liveCheck = await cli(['verify', 'receipt', `${s.url}/v1/receipts/${live.receipt_id}`, '--log-key', logKey]);
      expect(liveCheck.out).toMatchObject({
        verified: true,
        checks: { live_or_test: { ok: true, detail: 'a live receipt, in the receipts log' } },
      });
      expect(liveCheck.out!.test).toBeUndefined();
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'verifies a receipt from its verify_url, and refuses a tampered one offline',
    async () => {
      const fuse = await gate.createFuse();
      const hop = await gate.hop({ fuse_id: fuse.fuse_id });
      const online = await cli(['verify', 'receipt', `${s.url}/v1/receipts/${hop.receipt_id}`, '--log-key', logKey]);
      expect(online.code, online.stderr).toBe(0);
      expect(online.out).toMatchObject({
        verified: true,
        checks: { checkpoint: { ok: true }, checkpoint_jws: { ok: true }, inclusion: { ok: true }, leaf: { ok: true } },
      });

      const evidence = (await gate.receipt(hop.receipt_id)) as Record<string, any>;
      expect(evidence.receipt).toBeNull(); // a hop's receipt is batch-sealed
      const jwks = join(s.dir, 'jwks.json');
      writeFileSync(jwks, await (await s.fetch('/.well-known/prefinality-jwks.json')).text());
      const good = join(s.dir, 'evidence.json');
      writeFileSync(good, JSON.stringify(evidence));
      expect((await cli(['verify', 'receipt', good, '--jwks', jwks, '--log-key', logKey])).code).toBe(0);

      // Another receipt's leaf under this evidence's proof: the leaf matches its payload, the inclusion does not hold.
      const other = await gate.hop({ fuse_id: fuse.fuse_id });
      const o = (await gate.receipt(other.receipt_id)) as Record<string, any>;
      const swapped = join(s.dir, 'swapped.json');
      writeFileSync(swapped, JSON.stringify({ ...evidence, leaf: o.leaf, payload: o.payload }));
      // A changed payload no longer is its leaf.
      const changed = join(s.dir, 'changed.json');
      writeFileSync(changed, JSON.stringify({ ...evidence, payload: { ...evidence.payload, decision: 'PERMIT!' } }));
      // A self-contained receipt (the execute-gate JWS): a changed payload breaks its signature.
      const gated = await (
        await s.fetch('/api/v1/execute-gate', { key: secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })
      ).json();
      const [h, p, sig] = String(gated.receipt).split('.');
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), decision: 'PERMIT!' })).toString(
        'base64url',
      );
      const jwsFile = join(s.dir, 'forged.jws');
      writeFileSync(jwsFile, `${h}.${forged}.${sig}`);
      // The CLI runs are separate processes: run them side by side.
      const [r, c, f] = await Promise.all([
        cli(['verify', 'receipt', swapped, '--jwks', jwks, '--log-key', logKey]),
        cli(['verify', 'receipt', changed, '--jwks', jwks, '--log-key', logKey]),
        cli(['verify', 'receipt', jwsFile, '--jwks', jwks]),
      ]);
      expect(r.code).toBe(1);
      expect(r.out).toMatchObject({ verified: false, checks: { leaf: { ok: true }, inclusion: { ok: false } } });
      expect(c.out).toMatchObject({ verified: false, checks: { leaf: { ok: false } } });
      expect(f.out).toMatchObject({ verified: false, checks: { signature: { ok: false } } });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it(
    'verifies checkpoints, inclusion and consistency proofs from URLs and files',
    async () => {
      const base = `${s.url}/api/v1/logs/receipts`;
      const oldFile = join(s.dir, 'old.checkpoint');
      writeFileSync(oldFile, await (await s.fetch('/api/v1/logs/receipts/checkpoint')).text());
      expect((await cli(['verify', 'checkpoint', `${base}/checkpoint`, '--log-key', logKey])).code).toBe(0);
      const wrongKey = logKey.replace(/\+[0-9a-f]{8}\+/, '+00000000+');
      expect((await cli(['verify', 'checkpoint', oldFile, '--log-key', wrongKey])).code).toBe(1);

      const fuse = await gate.createFuse();
      await gate.hop({ fuse_id: fuse.fuse_id });
      const head = (await (await s.fetch('/api/v1/logs/receipts')).json()) as { tree_size: number };
      const oldSize = Number(readFileSync(oldFile, 'utf8').split('\n')[1]);
      const newFile = join(s.dir, 'new.checkpoint');
      writeFileSync(newFile, await (await s.fetch('/api/v1/logs/receipts/checkpoint')).text());
      const consistency = await cli([
        'verify',
        'consistency',
        '--old',
        oldFile,
        '--new',
        newFile,
        '--log-key',
        logKey,
        '--proof',
        `${base}/proof/consistency?from=${oldSize}&to=${head.tree_size}`,
      ]);
      expect(consistency.code, JSON.stringify(consistency.out)).toBe(0);

      const entry = (await (await s.fetch(`/api/v1/logs/receipts/entries?start=0&limit=1`)).json()) as { entries: Array<{ leaf: string }> };
      const leafFile = join(s.dir, 'leaf.bin');
      writeFileSync(leafFile, Buffer.from(entry.entries[0]!.leaf, 'base64'));
      const proofUrl = `${base}/proof/inclusion?index=0&tree_size=${head.tree_size}`;
      expect(
        (await cli(['verify', 'inclusion', '--checkpoint', newFile, '--log-key', logKey, '--proof', proofUrl, '--leaf-file', leafFile]))
          .code,
      ).toBe(0);
      writeFileSync(leafFile, 'not the leaf');
      expect(
        (await cli(['verify', 'inclusion', '--checkpoint', newFile, '--log-key', logKey, '--proof', proofUrl, '--leaf-file', leafFile]))
          .code,
      ).toBe(1);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

/**
 * Self-contained receipts: the document at a hop's verify_url verifies offline
 * (no network: the server is stopped first) with the log's verifier key and
 * the witnesses' keys; RR-1 accepts it once and refuses its replay, on this
 * gate's demo act and through fusegate/rr1 mounted by another service.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { H3, toNodeHandler } from 'h3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyLookup } from '../src/crypto/jws-verify.ts';
import { verifyReceiptEvidence, verifyReceiptToken, type ReceiptEvidenceDoc } from '../src/crypto/receipt.ts';
import { parseWitnessPolicy } from '../src/crypto/witness-policy.ts';
import { encodeReceiptDocument, memoryClaims, remoteReceiptVerifier, requireReceipt } from '../src/rr1/index.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { untilCommitted } from './support/commits.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';
import { startTestWitness, type TestWitness } from './support/test-witness.ts';
import { createHash, createPublicKey, verify as edVerify } from 'node:crypto';
import { decode as cborgDecode, encode as cborgEncode } from 'cborg';
import { verifyTransparentStatement } from '../src/crypto/cose.ts';

describe('self-contained receipt documents', () => {
  let s: TestServer;
  let w: TestWitness;
  let policyText: string;
  let owner: { secret: string; accountId: string };
  let agent: string;
  let fuse: string;
  let other: Server;
  let otherUrl: string;

  const hop = async (kind = 'pay') => {
    const r = await s.fetch('/v1/fuse/hop', { key: agent, json: { fuse_id: fuse, action: { kind, amount: '5.00' } } });
    expect(r.status).toBe(200);
    return (await r.json()) as { receipt_id: string; verify_url: string; decision: string };
  };
  const docOf = async (url: string) =>
    (await (await fetch(url, { headers: { accept: 'application/json' } })).json()) as ReceiptEvidenceDoc & { receipt_id: string };
  /** The document at `url` once its checkpoint carries the witness quorum: checked after each commit (a cosignature is stored by one). */
  const witnessedDoc = async (url: string) => {
    let doc: Awaited<ReturnType<typeof docOf>> | undefined;
    await untilCommitted(s.ctx.ledger, async () => (doc = await docOf(url)).witnesses?.quorum_holds === true);
    return doc!;
  };
  const pay = (token: string, base = `${s.url}/api/v1/require-receipt/demo/pay`) =>
    fetch(base, { method: 'POST', headers: { 'content-type': 'application/json', 'gate-receipt': token }, body: '{}' });

  beforeAll(async () => {
    w = await startTestWitness('w.docs.test', {});
    const dir = tempDir();
    policyText = `witness solo ${w.vkey} ${w.url}\nquorum solo\n`;
    writeFileSync(join(dir, 'policy'), policyText);
    s = await startTestServer(
      { WITNESS_POLICY: join(dir, 'policy'), WITNESS_INTERVAL_MS: '100', WITNESS_MAX_BACKOFF_MS: '200', DEMO_RATE_LIMIT: '1000' },
      dir,
    );
    for (const l of (await (await s.fetch('/api/v1/logs')).json()).logs as Array<{ origin: string; verifier_key: string }>)
      w.trust(l.origin, l.verifier_key);
    const o = await s.newKey('owner');
    owner = { secret: o.secret, accountId: o.accountId };
    agent = (await s.newKey('agent', 10_000, 'agent', owner.accountId)).secret;
    fuse = (await (await s.fetch('/v1/fuses', { key: owner.secret, json: { state: 'LIVE' } })).json()).fuse_id;
    // Another service, mounting fusegate/rr1 with the gate's published keys and its witness policy.
    const app = new H3();
    app.post('/wire', (event) => ({ wired: true, receipt_id: (event.context.rr1 as { receipt_id: string }).receipt_id }), {
      middleware: [
        requireReceipt({
          act: 'pay',
          gate: s.ctx.config.BASE_URL,
          claim: memoryClaims(),
          verify: remoteReceiptVerifier(`${s.url}/.well-known/prefinality-jwks.json`, { witnesses: parseWitnessPolicy(policyText) }),
        }),
      ],
    });
    other = createServer(toNodeHandler(app));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/wire`;
  });
  afterAll(async () => {
    await new Promise((r) => other?.close(r));
    await s?.stop();
    await w?.close();
  });

  it('RR-1 (this gate) accepts a hop receipt document once and refuses its replay; a tampered one is refused', async () => {
    const h = await hop();
    const doc = await docOf(h.verify_url);
    expect(doc.receipt).toBeNull();
    expect(doc.payload).toMatchObject({ receipt_id: h.receipt_id, kind: 'hop', decision: 'PERMIT', data: { act_kind: 'pay' } });
    const token = encodeReceiptDocument(doc);
    const first = await pay(token);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ acted: true, receipt_id: h.receipt_id });
    const again = await pay(token);
    expect(again.status).toBe(428);
    expect((await again.json()).code).toBe('receipt_replayed');
    // The same receipt as raw JSON (ASCII only, as JSON allows) is the same receipt: still claimed.
    const ascii = JSON.stringify(doc).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect((await (await pay(ascii)).json()).code).toBe('receipt_replayed');
    // Another hop's document with its payload changed: the leaf no longer matches, refused before any claim.
    const d2 = await docOf((await hop()).verify_url);
    const forged = encodeReceiptDocument({
      ...d2,
      payload: { ...d2.payload, data: { ...(d2.payload.data as object), act_kind: 'pay', amount: '9999' } },
    });
    const r = await pay(forged);
    expect(r.status).toBe(428);
    const body = await r.json();
    expect(body.code).toBe('receipt_unsigned');
    expect(body.detail).toMatch(/bad_leaf/);
    expect((await pay(encodeReceiptDocument(d2))).status).toBe(200);
  });

  it('fusegate/rr1 in another service accepts a witnessed document once, and refuses a tampered cosignature', async () => {
    const h = await hop();
    const doc = await witnessedDoc(h.verify_url);
    const lines = doc.checkpoint.split('\n');
    const at = lines.findIndex((l) => l.startsWith('\u2014 w.docs.test '));
    const blob = Buffer.from(lines[at]!.split(' ')[2]!, 'base64');
    blob[30]! ^= 1;
    lines[at] = `\u2014 w.docs.test ${blob.toString('base64')}`;
    const tampered = await fetch(otherUrl, {
      method: 'POST',
      headers: { 'gate-receipt': encodeReceiptDocument({ ...doc, checkpoint: lines.join('\n') }) },
    });
    expect(tampered.status).toBe(428);
    expect((await tampered.json()).detail).toMatch(/bad_witnesses: the cosignature by solo does not verify/);
    const ok = await fetch(otherUrl, { method: 'POST', headers: { 'gate-receipt': encodeReceiptDocument(doc) } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ wired: true, receipt_id: h.receipt_id });
    expect((await (await fetch(otherUrl, { method: 'POST', headers: { 'gate-receipt': encodeReceiptDocument(doc) } })).json()).code).toBe(
      'receipt_replayed',
    );
  });

  it(
    'the CLI verify takes the document as it is (base64url, as sent in Gate-Receipt), with a pinned policy and quorum',
    async () => {
      const h = await hop();
      const doc = await witnessedDoc(h.verify_url);
      const dir = tempDir();
      const files = {
        doc: join(dir, 'receipt.b64'),
        jwks: join(dir, 'jwks.json'),
        policy: join(dir, 'policy'),
        bad: join(dir, 'bad.json'),
      };
      writeFileSync(files.doc, encodeReceiptDocument(doc));
      writeFileSync(files.jwks, await (await s.fetch('/.well-known/prefinality-jwks.json')).text());
      writeFileSync(files.policy, policyText);
      const logKey = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_key: string }).verifier_key;
      const ok = await runCli([
        'verify',
        'receipt',
        files.doc,
        '--jwks',
        files.jwks,
        '--log-key',
        logKey,
        '--witness-policy',
        files.policy,
        '--require-quorum',
        '--json',
      ]);
      expect(ok.code).toBe(0);
      const out = JSON.parse(ok.stdout);
      expect(out).toMatchObject({
        verified: true,
        witnesses: { cosigned_by: ['solo'], quorum: 'solo', quorum_holds: true },
        payload: { receipt_id: h.receipt_id },
      });
      writeFileSync(
        files.bad,
        JSON.stringify({
          ...doc,
          checkpoint: doc.checkpoint.replace(
            /(\u2014 w\.docs\.test \S{30})(\S)/u,
            (_m, p: string, c: string) => `${p}${c === 'A' ? 'B' : 'A'}`,
          ),
        }),
      );
      const bad = await runCli([
        'verify',
        'receipt',
        files.bad,
        '--jwks',
        files.jwks,
        '--log-key',
        logKey,
        '--witness-policy',
        files.policy,
        '--json',
      ]);
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.stdout).checks.witnesses).toMatchObject({ ok: false, detail: expect.stringMatching(/does not verify/) });
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('serves the same receipt as SCITT COSE on its URL (Accept: application/cose), checked by a second CBOR implementation', async () => {
    const h = await hop();
    const json = await witnessedDoc(h.verify_url);
    const res = await fetch(h.verify_url, { headers: { accept: 'application/cose' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/cose; cose-type="cose-sign1"');
    expect(res.headers.get('vary')).toMatch(/accept/i);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const jwk = ((await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: Array<{ x: string }> }).keys[0]!;
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });

    // cborg, not the cbor2 that wrote it: tag 18, [protected bstr, unprotected map, payload, signature].
    const tags: Array<(d: () => unknown) => unknown> = [];
    tags[18] = (d) => ({ cose_sign1: d() });
    const opts = { useMaps: true, tags };
    const sign1 = (b: Uint8Array) =>
      (cborgDecode(b, opts) as { cose_sign1: [Uint8Array, Map<number, unknown>, Uint8Array | null, Uint8Array] }).cose_sign1;
    const sigStructure = (p: Uint8Array, payload: Uint8Array) => cborgEncode(['Signature1', p, new Uint8Array(0), payload]);
    const [sp, su, payload, ssig] = sign1(bytes);
    const sh = cborgDecode(sp, opts) as Map<number, unknown>;
    expect(sh.get(1)).toBe(-8);
    expect(sh.get(3)).toBe('application/json');
    expect(new TextDecoder().decode(sh.get(4) as Uint8Array)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sh.get(15)).toEqual(
      new Map<number, unknown>([
        [1, s.ctx.config.BASE_URL],
        [2, h.receipt_id],
      ]),
    );
    expect(new TextDecoder().decode(payload!)).toBe(json.leaf);
    expect(edVerify(null, sigStructure(sp, payload!), pub, ssig)).toBe(true);

    // The receipt in header 394: vds 1 (RFC9162_SHA256), vdp {-1: [bstr .cbor [size, index, path]]}, detached payload.
    const [rp, ru, rpayload, rsig] = sign1((su.get(394) as Uint8Array[])[0]!);
    expect(rpayload).toBeNull();
    expect((cborgDecode(rp, opts) as Map<number, unknown>).get(395)).toBe(1);
    const [size, index, path] = cborgDecode(((ru.get(396) as Map<number, unknown>).get(-1) as Uint8Array[])[0]!) as [
      number,
      number,
      Uint8Array[],
    ];
    expect([size, index]).toEqual([json.inclusion.tree_size, json.log.index]);
    // RFC 9162 2.1.3.2, written here: the root the path leads to from SHA-256(0x00 || entry).
    const sha = (...b: Uint8Array[]) => new Uint8Array(createHash('sha256').update(Buffer.concat(b)).digest());
    let fn = index;
    let sn = size - 1;
    let r = sha(new Uint8Array([0]), payload!);
    for (const p of path) {
      if (fn % 2 === 1 || fn === sn) {
        r = sha(new Uint8Array([1]), p, r);
        while (fn % 2 === 0 && fn !== 0) [fn, sn] = [fn >> 1, sn >> 1];
      } else r = sha(new Uint8Array([1]), r, p);
      [fn, sn] = [fn >> 1, sn >> 1];
    }
    expect(sn).toBe(0);
    expect(Buffer.from(r).toString('base64')).toBe(json.checkpoint.split('\n')[2]);
    expect(edVerify(null, sigStructure(rp, r), pub, rsig)).toBe(true);
    // And the producing library's own verifier agrees; a flipped byte in the entry fails it.
    const raw = new Uint8Array(Buffer.from(jwk.x, 'base64url'));
    expect(await verifyTransparentStatement(bytes, raw)).toMatchObject({ leafIndex: json.log.index, treeSize: json.inclusion.tree_size });
    const bad = Uint8Array.from(bytes);
    const at = Buffer.from(bad).indexOf(Buffer.from(h.receipt_id));
    bad[at]! ^= 1;
    await expect(verifyTransparentStatement(bad, raw)).rejects.toThrow(/does not verify/);
  });

  it('verifies offline, with no network: the log key, the JWKS and the witness policy, saved beforehand', async () => {
    const h = await hop();
    const doc = await witnessedDoc(h.verify_url);
    const logKeys = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_keys: string[] }).verifier_keys;
    const jwks = ((await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: Array<{ kid: string; x: string }> }).keys;
    const bytes = JSON.stringify(doc);
    await s.stop();
    // From here on nothing can be fetched: only the saved document and keys.
    const keys: KeyLookup = {
      byKid: (kid) => {
        const k = jwks.find((j) => j.kid === kid);
        return k ? { kid, raw: new Uint8Array(Buffer.from(k.x, 'base64url')) } : undefined;
      },
    };
    const policy = parseWitnessPolicy(policyText);
    const saved = JSON.parse(bytes) as ReceiptEvidenceDoc;
    const checks = await verifyReceiptEvidence(saved, { keys, logKey: logKeys[0]!, witnesses: policy, requireQuorum: true });
    expect(Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.ok]))).toEqual({
      checkpoint: true,
      checkpoint_jws: true,
      inclusion: true,
      witnesses: true,
      leaf: true,
    });
    expect(checks.witnesses!.detail).toBe('cosigned by solo; quorum solo holds');
    expect(await verifyReceiptToken(encodeReceiptDocument(saved), { keys, logKeys, witnesses: policy, requireQuorum: true })).toMatchObject(
      { valid: true, payload: { receipt_id: h.receipt_id } },
    );
    // A proof moved to another index fails; a document without the quorum's cosignature fails when the quorum is required.
    const moved = await verifyReceiptEvidence(
      { ...saved, log: { ...saved.log, index: saved.log.index + 1 } },
      { keys, logKey: logKeys[0]! },
    );
    expect(moved.inclusion!.ok).toBe(false);
    const bare = saved.checkpoint
      .split('\n')
      .filter((l) => !l.startsWith('\u2014 w.docs.test '))
      .join('\n');
    const unwitnessed = await verifyReceiptEvidence(
      { ...saved, checkpoint: bare },
      { keys, logKey: logKeys[0]!, witnesses: policy, requireQuorum: true },
    );
    expect(unwitnessed.witnesses).toEqual({ ok: false, detail: 'cosigned by no witness of the policy: quorum solo does NOT hold' });
    expect(unwitnessed.checkpoint!.ok).toBe(true);
  });
});

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
import { verifyReceiptEvidence, verifyReceiptToken, type KeyLookup, type ReceiptEvidenceDoc } from '../src/crypto/receipt.ts';
import { parseWitnessPolicy } from '../src/crypto/witness-policy.ts';
import { encodeReceiptDocument, memoryClaims, remoteReceiptVerifier, requireReceipt } from '../src/rr1/index.ts';
import { runCli } from './support/cli.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';
import { startTestWitness, type TestWitness } from './support/test-witness.ts';
import { createPublicKey } from 'node:crypto';

const until = async <T>(f: () => Promise<T | undefined | false>, ms = 5000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
};

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
  const docOf = async (url: string) => (await (await fetch(url, { headers: { accept: 'application/json' } })).json()) as ReceiptEvidenceDoc & { receipt_id: string };
  const pay = (token: string, base = `${s.url}/api/v1/require-receipt/demo/pay`) => fetch(base, { method: 'POST', headers: { 'content-type': 'application/json', 'gate-receipt': token }, body: '{}' });

  beforeAll(async () => {
    w = await startTestWitness('w.docs.test', {});
    const dir = tempDir();
    policyText = `witness solo ${w.vkey} ${w.url}\nquorum solo\n`;
    writeFileSync(join(dir, 'policy'), policyText);
    s = await startTestServer({ WITNESS_POLICY: join(dir, 'policy'), WITNESS_INTERVAL_MS: '100', WITNESS_MAX_BACKOFF_MS: '200', DEMO_RATE_LIMIT: '1000' }, dir);
    for (const l of (await (await s.fetch('/api/v1/logs')).json()).logs as Array<{ origin: string; verifier_key: string }>) w.trust(l.origin, l.verifier_key);
    const o = await s.newKey('owner');
    owner = { secret: o.secret, accountId: o.accountId };
    agent = (await s.newKey('agent', 10_000, 'agent', owner.accountId)).secret;
    fuse = (await (await s.fetch('/v1/fuses', { key: owner.secret, json: { state: 'LIVE' } })).json()).fuse_id;
    // Another service, mounting fusegate/rr1 with the gate's published keys and its witness policy.
    const app = new H3();
    app.post('/wire', (event) => ({ wired: true, receipt_id: (event.context.rr1 as { receipt_id: string }).receipt_id }), {
      middleware: [requireReceipt({ act: 'pay', gate: s.ctx.config.BASE_URL, claim: memoryClaims(), verify: remoteReceiptVerifier(`${s.url}/.well-known/prefinality-jwks.json`, { witnesses: parseWitnessPolicy(policyText) }) })],
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
    const forged = encodeReceiptDocument({ ...d2, payload: { ...d2.payload, data: { ...(d2.payload.data as object), act_kind: 'pay', amount: '9999' } } });
    const r = await pay(forged);
    expect(r.status).toBe(428);
    const body = await r.json();
    expect(body.code).toBe('receipt_unsigned');
    expect(body.detail).toMatch(/bad_leaf/);
    expect((await pay(encodeReceiptDocument(d2))).status).toBe(200);
  });

  it('fusegate/rr1 in another service accepts a witnessed document once, and refuses a tampered cosignature', async () => {
    const h = await hop();
    const doc = await until(async () => {
      const d = await docOf(h.verify_url);
      return d.witnesses?.quorum_holds && d;
    });
    const lines = doc.checkpoint.split('\n');
    const at = lines.findIndex((l) => l.startsWith('\u2014 w.docs.test '));
    const blob = Buffer.from(lines[at]!.split(' ')[2]!, 'base64');
    blob[30]! ^= 1;
    lines[at] = `\u2014 w.docs.test ${blob.toString('base64')}`;
    const tampered = await fetch(otherUrl, { method: 'POST', headers: { 'gate-receipt': encodeReceiptDocument({ ...doc, checkpoint: lines.join('\n') }) } });
    expect(tampered.status).toBe(428);
    expect((await tampered.json()).detail).toMatch(/bad_witnesses: cosignature by w\.docs\.test does not verify/);
    const ok = await fetch(otherUrl, { method: 'POST', headers: { 'gate-receipt': encodeReceiptDocument(doc) } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ wired: true, receipt_id: h.receipt_id });
    expect((await (await fetch(otherUrl, { method: 'POST', headers: { 'gate-receipt': encodeReceiptDocument(doc) } })).json()).code).toBe('receipt_replayed');
  });

  it('the CLI verify takes the document as it is (base64url, as sent in Gate-Receipt), with a pinned policy and quorum', async () => {
    const h = await hop();
    const doc = await until(async () => {
      const d = await docOf(h.verify_url);
      return d.witnesses?.quorum_holds && d;
    });
    const dir = tempDir();
    const files = { doc: join(dir, 'receipt.b64'), jwks: join(dir, 'jwks.json'), policy: join(dir, 'policy'), bad: join(dir, 'bad.json') };
    writeFileSync(files.doc, encodeReceiptDocument(doc));
    writeFileSync(files.jwks, await (await s.fetch('/.well-known/prefinality-jwks.json')).text());
    writeFileSync(files.policy, policyText);
    const logKey = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_key: string }).verifier_key;
    const ok = await runCli(['verify', 'receipt', files.doc, '--jwks', files.jwks, '--log-key', logKey, '--witness-policy', files.policy, '--require-quorum', '--json']);
    expect(ok.code).toBe(0);
    const out = JSON.parse(ok.stdout);
    expect(out).toMatchObject({ verified: true, witnesses: { cosigned_by: ['solo'], quorum: 'solo', quorum_holds: true }, payload: { receipt_id: h.receipt_id } });
    writeFileSync(files.bad, JSON.stringify({ ...doc, checkpoint: doc.checkpoint.replace(/(\u2014 w\.docs\.test \S{30})(\S)/u, (_m, p: string, c: string) => `${p}${c === 'A' ? 'B' : 'A'}`) }));
    const bad = await runCli(['verify', 'receipt', files.bad, '--jwks', files.jwks, '--log-key', logKey, '--witness-policy', files.policy, '--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).checks.witnesses).toMatchObject({ ok: false, detail: expect.stringMatching(/does not verify/) });
  });

  it('verifies offline, with no network: the log key, the JWKS and the witness policy, saved beforehand', async () => {
    const h = await hop();
    const doc = await until(async () => {
      const d = await docOf(h.verify_url);
      return d.witnesses?.quorum_holds && d;
    });
    const logKeys = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_keys: string[] }).verifier_keys;
    const jwks = ((await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: Array<{ kid: string; x: string }> }).keys;
    const bytes = JSON.stringify(doc);
    await s.stop();
    // From here on nothing can be fetched: only the saved document and keys.
    const keys: KeyLookup = {
      byKid: (kid) => {
        const k = jwks.find((j) => j.kid === kid);
        return k ? { kid, publicKey: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: k.x }, format: 'jwk' }) } : undefined;
      },
    };
    const policy = parseWitnessPolicy(policyText);
    const saved = JSON.parse(bytes) as ReceiptEvidenceDoc;
    const checks = await verifyReceiptEvidence(saved, { keys, logKey: logKeys[0]!, witnesses: policy, requireQuorum: true });
    expect(Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.ok]))).toEqual({ checkpoint: true, checkpoint_jws: true, inclusion: true, witnesses: true, leaf: true });
    expect(checks.witnesses!.detail).toBe('cosigned by solo; quorum solo holds');
    expect(await verifyReceiptToken(encodeReceiptDocument(saved), { keys, logKeys, witnesses: policy, requireQuorum: true })).toMatchObject({ valid: true, payload: { receipt_id: h.receipt_id } });
    // A proof moved to another index fails; a document without the quorum's cosignature fails when the quorum is required.
    const moved = await verifyReceiptEvidence({ ...saved, log: { ...saved.log, index: saved.log.index + 1 } }, { keys, logKey: logKeys[0]! });
    expect(moved.inclusion!.ok).toBe(false);
    const bare = saved.checkpoint.split('\n').filter((l) => !l.startsWith('\u2014 w.docs.test ')).join('\n');
    const unwitnessed = await verifyReceiptEvidence({ ...saved, checkpoint: bare }, { keys, logKey: logKeys[0]!, witnesses: policy, requireQuorum: true });
    expect(unwitnessed.witnesses).toEqual({ ok: false, detail: 'cosigned by no witness of the policy: quorum solo does NOT hold' });
    expect(unwitnessed.checkpoint!.ok).toBe(true);
  });
});

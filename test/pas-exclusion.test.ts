/**
 * Exclusion proofs (issue 6, point 4): the service's answer verifies with the
 * exported verifier and the service's public key; the checkpoint note also
 * verifies with node:crypto directly; forged proofs are refused.
 */
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exclusionProofJson, jobKey, verifyExclusionProof, type ExclusionProofJson } from '../src/crypto/exclusion.ts';
import { checkpointText, signNote } from '../src/crypto/note.ts';
import { SortedMerkleTree } from '../src/crypto/sorted-merkle.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let key: { id: string; secret: string };
let publicRaw: Uint8Array;
const WRITE = { op: 'bind' };
const JOBS = ['job_b', 'job_d', 'job_f', 'job_h'];

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const proofOf = async (job: string, k = key.secret): Promise<ExclusionProofJson> => (await s.fetch(`/v1/pas/exclusion?job_id=${job}`, { key: k })).json();

beforeAll(async () => {
  s = await startTestServer();
  key = await s.newKey('excl');
  const fuse = (await (await s.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: key.secret })).json()).fuse_id;
  await s.fetch('/v1/pas/licenses/lic_x/charge', { method: 'POST', key: key.secret });
  for (const job of JOBS) {
    const t = (await (await s.fetch('/v1/pas/pas-a/pre-bind', { json: { fuse_id: fuse, license_id: 'lic_x', job_id: job, write: WRITE }, key: key.secret })).json()).ticket;
    const r = await s.fetch('/v1/pas/bind-ticket/redeem', { json: { ticket_id: t.ticket_id, write: WRITE, now: new Date().toISOString() }, key: key.secret });
    expect(r.status).toBe(200);
  }
  // A ticket issued but never redeemed leaves no spend leaf.
  await s.fetch('/v1/pas/pas-a/pre-bind', { json: { fuse_id: fuse, license_id: 'lic_x', job_id: 'job_e', write: WRITE }, key: key.secret });
  const pk = await (await s.fetch('/crypto/public-key')).json();
  publicRaw = new Uint8Array(Buffer.from(pk.jwk.x, 'base64url'));
});
afterAll(() => s.stop());

describe('GET /v1/pas/exclusion', () => {
  it('proves that an unredeemed job has no spend leaf: adjacent neighbours against a signed head', async () => {
    const p = await proofOf('job_e');
    expect(p).toMatchObject({ job_id: 'job_e', present: false, excluded: true, checkpoint: { tree_size: 4 } });
    expect(p.proof).toMatchObject({ present: false, left: { key: 'job_d', index: 1 }, right: { key: 'job_f', index: 2 } });
    expect(verifyExclusionProof('job_e', p, publicRaw)).toEqual({ present: false, size: 4, origin: p.checkpoint.origin });
    expect(verifyExclusionProof('job_e', p, (p as unknown as { verifier_key: string }).verifier_key, p.checkpoint.origin).present).toBe(false);
    // Edges: before the first leaf and after the last.
    expect(verifyExclusionProof('job_a', await proofOf('job_a'), publicRaw).present).toBe(false);
    expect(verifyExclusionProof('job_z', await proofOf('job_z'), publicRaw).present).toBe(false);
  });

  it("proves a redeemed job's inclusion", async () => {
    const p = await proofOf('job_f');
    expect(p).toMatchObject({ present: true, excluded: false });
    expect(verifyExclusionProof('job_f', p, publicRaw).present).toBe(true);
  });

  it('signs the head as a C2SP note that node:crypto verifies on its own', async () => {
    const p = await proofOf('job_e');
    const [text, sig] = p.checkpoint.note.split('\n\n');
    expect(text).toBe(`${p.checkpoint.origin}\n4\n${p.checkpoint.root_hash}`);
    const blob = Buffer.from(sig!.trim().split(' ')[2]!, 'base64');
    const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicRaw]);
    expect(verify(null, Buffer.from(text + '\n'), createPublicKey({ key: spki, format: 'der', type: 'spki' }), blob.subarray(4))).toBe(true);
  });

  it('keeps trees per key: another key has an empty tree, and its proof is pinned to its own origin', async () => {
    const other = await s.newKey('other');
    const p = await proofOf('job_f', other.secret);
    expect(p).toMatchObject({ present: false, checkpoint: { tree_size: 0 } });
    expect(verifyExclusionProof('job_f', p, publicRaw).present).toBe(false);
    const mine = await proofOf('job_f');
    expect(() => verifyExclusionProof('job_f', mine, publicRaw, p.checkpoint.origin)).toThrow();
  });

  it('refuses bad input with 400 naming job_id', async () => {
    const r = await s.fetch('/v1/pas/exclusion?job_id=a%20b', { key: key.secret });
    expect(r.status).toBe(400);
    expect((await r.json()).errors[0].field).toBe('job_id');
  });
});

describe('forged exclusion proofs are refused', () => {
  it('from the service answer', async () => {
    const absent = await proofOf('job_e');
    const present = await proofOf('job_f');
    const forgeries: Array<[string, string, ExclusionProofJson, Uint8Array | string]> = [];
    const add = (name: string, job: string, mutate: (p: ExclusionProofJson) => void, base = absent, trust: Uint8Array | string = publicRaw) => {
      const p = clone(base);
      mutate(p);
      forgeries.push([name, job, p, trust]);
    };
    // Claim a redeemed job is absent: reuse the absence proof of its neighbour gap.
    add('relabelled absence for a present job', 'job_d', (p) => (p.job_id = 'job_d'));
    add('absence claimed for a present job', 'job_f', (p) => { p.job_id = 'job_f'; }, absent);
    add('left neighbour key changed', 'job_e', (p) => { if (!p.proof.present) p.proof.left!.key = 'job_c'; });
    const far = await proofOf('job_h');
    add('neighbours not adjacent', 'job_e', (p) => { if (!p.proof.present && far.proof.present) p.proof.right = clone(far.proof.leaf); });
    add('right neighbour dropped', 'job_e', (p) => { if (!p.proof.present) delete p.proof.right; });
    add('tree size changed in the proof', 'job_e', (p) => { p.proof.tree_size = 3; });
    add('inclusion hash flipped', 'job_e', (p) => {
      if (p.proof.present) return;
      const h = Buffer.from(p.proof.left!.hashes[0]!, 'base64');
      h[0] = h[0]! ^ 1;
      p.proof.left!.hashes[0] = h.toString('base64');
    });
    add('signed note size edited', 'job_e', (p) => { p.checkpoint.note = p.checkpoint.note.replace('\n4\n', '\n5\n'); });
    add('note signature missing', 'job_e', (p) => { p.checkpoint.note = p.checkpoint.note.split('\n\n')[0] + '\n\n'; });
    add('presence misstated', 'job_f', (p) => { p.present = false; p.excluded = true; }, present);
    const stranger = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    add('checked against another key', 'job_e', () => undefined, absent, new Uint8Array(Buffer.from(stranger, 'base64url')));
    for (const [name, job, p, trust] of forgeries) {
      expect(() => verifyExclusionProof(job, p, trust), name).toThrow();
    }
  });

  it('signed by a forger over a tree that omits the leaf', () => {
    // A forger with its own key builds a tree without job_f and signs it: the service key refuses it.
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
    const tree = new SortedMerkleTree(['job_b', 'job_d', 'job_h'].map(jobKey));
    const origin = 'gate.example/pas-exclusion/key_x';
    const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root() }), origin, privateKey, raw);
    const p = exclusionProofJson('job_f', tree.prove(jobKey('job_f')), { origin, tree_size: tree.size, root_hash: '', note });
    expect(verifyExclusionProof('job_f', p, raw).present).toBe(false); // valid under the forger's own key...
    expect(() => verifyExclusionProof('job_f', p, publicRaw)).toThrow(); // ...never under the service's
  });

  it('at scale: every gap of a 10,000-leaf tree proves absence and no leaf can be proven absent', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
    const ids = Array.from({ length: 10_000 }, (_, i) => `job_${String(i * 2).padStart(6, '0')}`);
    const tree = new SortedMerkleTree(ids.map(jobKey));
    const origin = 'gate.example/pas-exclusion/key_y';
    const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root() }), origin, privateKey, raw);
    const head = { origin, tree_size: tree.size, root_hash: '', note };
    for (const i of [0, 1, 4_999, 9_998, 9_999]) {
      const odd = `job_${String(i * 2 + 1).padStart(6, '0')}`;
      expect(verifyExclusionProof(odd, exclusionProofJson(odd, tree.prove(jobKey(odd)), head), raw).present).toBe(false);
      // Reusing a gap's absence proof for its own neighbour fails.
      const neighbour = ids[i]!;
      const forged = { ...exclusionProofJson(odd, tree.prove(jobKey(odd)), head), job_id: neighbour };
      expect(() => verifyExclusionProof(neighbour, forged, raw)).toThrow();
    }
  });
});

/**
 * Exclusion proofs (issue 6, point 4; issue 13, point 5): the service's answer
 * verifies with the exported verifier and the service's public key AND with a
 * second implementation written here on node:crypto alone (note signature,
 * then the sparse Merkle path, from docs/exclusion-proofs.md); the tree is
 * persisted and updated by each redeem (a second server process on the same
 * file sees it at once); forged proofs are refused.
 */
import { spawn } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '@libsql/client';
import { remoteSql } from '../src/ledger/drivers/embedded/open.ts';
import { FuseGateClient, verifyExclusion } from '../src/client.ts';
import {
  EXCLUSION_PROOF_FORMAT,
  exclusionProofJson,
  jobKey,
  verifyExclusionProof,
  type ExclusionProofJson,
} from '../src/crypto/exclusion.ts';
import { signerOf } from '../src/crypto/ed25519.ts';
import { checkpointText, signNote } from '../src/crypto/note.ts';
import { buildTree, proofOfPath, walkPath, type NodeReader, type SmtNode } from '../src/crypto/sparse-merkle.ts';
import { migrate } from '../src/ledger/migrate.ts';
import { exclusionHead, proveExclusion } from '../src/ledger/pas-exclusion.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';

let s: TestServer;
let key: { id: string; secret: string };
let publicRaw: Uint8Array;
const WRITE = { op: 'bind' };
const JOBS = ['job_b', 'job_d', 'job_f', 'job_h'];

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const proofOf = async (job: string, k = key.secret, srv = s): Promise<ExclusionProofJson> =>
  (await srv.fetch(`/v1/pas/exclusion?job_id=${job}`, { key: k })).json();

// ---------------------------------------------------------------- the second implementation

const sha = (...parts: Uint8Array[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest();
const bit = (k: Uint8Array, i: number) => (k[i >> 3]! >> (7 - (i & 7))) & 1;

/** Checks an answer by hand, as docs/exclusion-proofs.md says: 'present' | 'absent', or throws. */
function checkByHand(jobId: string, answer: ExclusionProofJson, publicKey: Uint8Array): 'present' | 'absent' {
  const [text, sigBlock] = answer.checkpoint.note.split('\n\n');
  const [origin, size, rootB64] = text!.split('\n');
  if (!/\/pas-exclusion-smt\//.test(origin!) || !/^\d+$/.test(size!)) throw new Error('not an exclusion checkpoint');
  const sig = Buffer.from(sigBlock!.trim().split(' ')[2]!, 'base64').subarray(4);
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]);
  if (!verify(null, Buffer.from(text + '\n'), createPublicKey({ key: spki, format: 'der', type: 'spki' }), sig))
    throw new Error('bad note signature');
  const p = answer.proof;
  if (p.format !== 'sparse-merkle-sha256') throw new Error('unknown format');
  const key = sha(Buffer.from(jobId, 'utf8'));
  const bitmap = Buffer.from(p.bitmap, 'base64');
  if (bitmap.length !== Math.ceil(p.depth / 8)) throw new Error('bitmap length');
  const given = p.siblings.map((x) => Buffer.from(x, 'base64'));
  const siblings = Array.from({ length: p.depth }, (_, i) => (bit(bitmap, i) ? given.shift() : Buffer.alloc(32)));
  if (given.length || siblings.some((x) => x?.length !== 32)) throw new Error('siblings do not match the bitmap');
  const leaf = p.leaf === undefined ? undefined : Buffer.from(p.leaf, 'base64');
  if (leaf) for (let i = 0; i < p.depth; i++) if (bit(leaf, i) !== bit(key, i)) throw new Error('terminal leaf off the path');
  let h = leaf ? sha(Buffer.from([0]), leaf) : Buffer.alloc(32);
  for (let d = p.depth; d >= 1; d--)
    h = bit(key, d - 1) ? sha(Buffer.from([1]), siblings[d - 1]!, h) : sha(Buffer.from([1]), h, siblings[d - 1]!);
  if (!h.equals(Buffer.from(rootB64!, 'base64'))) throw new Error('root mismatch');
  return leaf?.equals(key) ? 'present' : 'absent';
}

beforeAll(async () => {
  s = await startTestServer();
  key = await s.newKey('excl');
  const fuse = (await (await s.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: key.secret })).json()).fuse_id;
  await s.fetch('/v1/pas/licenses/lic_x/charge', { method: 'POST', key: key.secret });
  for (const job of JOBS) {
    const t = (
      await (
        await s.fetch('/v1/pas/pas-a/pre-bind', {
          json: { fuse_id: fuse, license_id: 'lic_x', job_id: job, write: WRITE },
          key: key.secret,
        })
      ).json()
    ).ticket;
    const r = await s.fetch('/v1/pas/bind-ticket/redeem', {
      json: { ticket_id: t.ticket_id, write: WRITE, now: new Date().toISOString() },
      key: key.secret,
    });
    expect(r.status).toBe(200);
  }
  // A ticket issued but never redeemed leaves no spend leaf.
  await s.fetch('/v1/pas/pas-a/pre-bind', { json: { fuse_id: fuse, license_id: 'lic_x', job_id: 'job_e', write: WRITE }, key: key.secret });
  const pk = await (await s.fetch('/crypto/public-key')).json();
  publicRaw = new Uint8Array(Buffer.from(pk.jwk.x, 'base64url'));
});
afterAll(() => s.stop());

/** An in-memory tree of `jobs`, and its proofs (for forgers and scale). */
async function memoryTree(jobs: string[]) {
  const nodes = new Map<string, SmtNode>();
  const id = (d: number, p: Uint8Array) => `${d}/${Buffer.from(p).toString('hex')}`;
  const root = await buildTree(jobs.map(jobKey).sort(Buffer.compare), (n) => void nodes.set(id(n.depth, n.prefix), n));
  const read: NodeReader = async (ids) => ids.flatMap((x) => nodes.get(id(x.depth, x.prefix)) ?? []);
  return { root, size: jobs.length, prove: async (job: string) => proofOfPath(await walkPath(read, jobKey(job))) };
}

/** The root of a key's redeemed jobs straight from the definition, recursive over the spend-leaf rows. */
function definitionRoot(keys: Buffer[], depth = 0): Buffer {
  if (keys.length === 0) return Buffer.alloc(32);
  if (keys.length === 1) return sha(Buffer.from([0]), keys[0]!);
  return sha(
    Buffer.from([1]),
    definitionRoot(
      keys.filter((k) => !bit(k, depth)),
      depth + 1,
    ),
    definitionRoot(
      keys.filter((k) => bit(k, depth)),
      depth + 1,
    ),
  );
}

async function spendLeafRoot(db: { execute: Client['execute'] }, keyId: string): Promise<string> {
  const rs = await db.execute({ sql: 'SELECT job_id FROM pas_spend_leaves WHERE key_id = ?', args: [keyId] });
  return definitionRoot(rs.rows.map((r) => sha(Buffer.from(String(r.job_id), 'utf8')))).toString('base64');
}

describe('GET /v1/pas/exclusion', () => {
  it('proves that an unredeemed job has no spend leaf against a signed head; both implementations agree', async () => {
    const p = await proofOf('job_e');
    expect(p).toMatchObject({ job_id: 'job_e', present: false, excluded: true, checkpoint: { tree_size: 4 } });
    expect(p.proof).toMatchObject({ format: EXCLUSION_PROOF_FORMAT, key: sha(Buffer.from('job_e')).toString('base64') });
    expect(p.proof.depth).toBeLessThanOrEqual(8);
    expect(await verifyExclusionProof('job_e', p, publicRaw)).toEqual({ present: false, size: 4, origin: p.checkpoint.origin });
    expect(
      (await verifyExclusionProof('job_e', p, (p as unknown as { verifier_key: string }).verifier_key, p.checkpoint.origin)).present,
    ).toBe(false);
    expect(checkByHand('job_e', p, publicRaw)).toBe('absent');
    for (const job of ['job_a', 'job_z', 'job_', 'job_bb']) {
      const q = await proofOf(job);
      expect((await verifyExclusionProof(job, q, publicRaw)).present, job).toBe(false);
      expect(checkByHand(job, q, publicRaw), job).toBe('absent');
    }
  });

  it("proves each redeemed job's inclusion", async () => {
    for (const job of JOBS) {
      const p = await proofOf(job);
      expect(p).toMatchObject({ present: true, excluded: false });
      expect((await verifyExclusionProof(job, p, publicRaw)).present, job).toBe(true);
      expect(checkByHand(job, p, publicRaw), job).toBe('present');
    }
  });

  it('signs the head as a C2SP note that node:crypto verifies on its own', async () => {
    const p = await proofOf('job_e');
    const [text, sig] = p.checkpoint.note.split('\n\n');
    expect(text).toBe(`${p.checkpoint.origin}\n4\n${p.checkpoint.root_hash}`);
    expect(p.checkpoint.origin).toBe(`${new URL(s.config.SITE_URL).host}/pas-exclusion-smt/${key.id}`);
    const blob = Buffer.from(sig!.trim().split(' ')[2]!, 'base64');
    const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicRaw]);
    expect(verify(null, Buffer.from(text + '\n'), createPublicKey({ key: spki, format: 'der', type: 'spki' }), blob.subarray(4))).toBe(
      true,
    );
  });

  it('is persisted with the redeems: a separate connection reads the signed root, which the spend-leaf rows recompute', async () => {
    const db = remoteSql(createClient({ url: s.config.DATABASE_URL, intMode: 'number' }));
    try {
      const before = await exclusionHead(db, key.id);
      expect(before.size).toBe(4);
      const signed = await proofOf('job_e');
      expect(Buffer.from(before.root).toString('base64')).toBe(signed.checkpoint.root_hash);
      expect(await spendLeafRoot(db, key.id)).toBe(signed.checkpoint.root_hash);
      // A redeem adds its job in its own transaction: the next proof (any process) already has it.
      const fuse = (await (await s.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: key.secret })).json()).fuse_id;
      const t = (
        await (
          await s.fetch('/v1/pas/pas-a/pre-bind', {
            json: { fuse_id: fuse, license_id: 'lic_x', job_id: 'job_late', write: WRITE },
            key: key.secret,
          })
        ).json()
      ).ticket;
      expect(checkByHand('job_late', await proofOf('job_late'), publicRaw)).toBe('absent');
      const r = await s.fetch('/v1/pas/bind-ticket/redeem', {
        json: { ticket_id: t.ticket_id, write: WRITE, now: new Date().toISOString() },
        key: key.secret,
      });
      expect(r.status).toBe(200);
      const { head, proof } = await proveExclusion(db, key.id, 'job_late');
      expect(head.size).toBe(5);
      expect(proof.leaf && Buffer.from(proof.leaf).equals(sha(Buffer.from('job_late')))).toBe(true);
      const after = await proofOf('job_late');
      expect(checkByHand('job_late', after, publicRaw)).toBe('present');
      expect(after.checkpoint.root_hash).toBe(await spendLeafRoot(db, key.id));
      // A replayed redeem (HALT) adds nothing.
      const again = await s.fetch('/v1/pas/bind-ticket/redeem', {
        json: { ticket_id: t.ticket_id, write: WRITE, now: new Date().toISOString() },
        key: key.secret,
      });
      expect(again.status).toBe(409);
      expect((await exclusionHead(db, key.id)).size).toBe(5);
    } finally {
      db.close();
    }
  });

  it('keeps trees per key: another key has an empty tree, and its proof is pinned to its own origin', async () => {
    const other = await s.newKey('other');
    const p = await proofOf('job_f', other.secret);
    expect(p).toMatchObject({ present: false, checkpoint: { tree_size: 0, root_hash: Buffer.alloc(32).toString('base64') } });
    expect((await verifyExclusionProof('job_f', p, publicRaw)).present).toBe(false);
    expect(checkByHand('job_f', p, publicRaw)).toBe('absent');
    const mine = await proofOf('job_f');
    await expect(verifyExclusionProof('job_f', mine, publicRaw, p.checkpoint.origin)).rejects.toThrow();
  });

  it('refuses bad input with 400 naming job_id', async () => {
    const r = await s.fetch('/v1/pas/exclusion?job_id=a%20b', { key: key.secret });
    expect(r.status).toBe(400);
    expect((await r.json()).errors[0].field).toBe('job_id');
  });
});

/** Runs the CLI as its own process; async, because the server under test lives in this process. */
function cli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out?: Record<string, any>; stderr: string }> {
  const { BASE_URL: _b, SITE_URL: _s, ...inherited } = process.env;
  const child = spawn(process.execPath, ['src/cli.ts', ...args, '--json'], { env: { ...inherited, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) =>
    child.on('close', (code) => resolve({ code, stderr, ...(stdout ? { out: JSON.parse(stdout) as Record<string, any> } : {}) })),
  );
}

describe('the typed client and the verify CLI', () => {
  it('fetch and check exclusion proofs, offline from files and against the URL; a tampered answer fails', async () => {
    const gate = new FuseGateClient({ baseUrl: s.url, apiKey: key.secret });
    const answer = await gate.exclusionProof('job_e');
    expect((await verifyExclusion('job_e', answer, answer.verifier_key, answer.checkpoint.origin)).present).toBe(false);
    expect((await verifyExclusion('job_b', await gate.exclusionProof('job_b'), publicRaw)).present).toBe(true);
    const dir = tempDir();
    const { status: _s, ...saved } = answer;
    writeFileSync(join(dir, 'answer.json'), JSON.stringify(saved));
    writeFileSync(join(dir, 'pk.json'), await (await s.fetch('/crypto/public-key')).text());
    const offline = await cli([
      'verify',
      'exclusion',
      join(dir, 'answer.json'),
      '--job',
      'job_e',
      '--public-key',
      join(dir, 'pk.json'),
      '--origin',
      answer.checkpoint.origin,
    ]);
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.out).toMatchObject({ verified: true, present: false, excluded: true });
    // A tampered answer, checked with the note key, proves nothing (the job is not the one it was for, a sibling is gone).
    writeFileSync(
      join(dir, 'tampered.json'),
      JSON.stringify({ ...saved, job_id: 'job_d', proof: { ...saved.proof, siblings: saved.proof.siblings.slice(1) } }),
    );
    const tampered = await cli(['verify', 'exclusion', join(dir, 'tampered.json'), '--job', 'job_d', '--note-key', answer.verifier_key]);
    expect(tampered.code).toBe(1);
    expect(tampered.out).toMatchObject({ verified: false });
    const online = await cli(['verify', 'exclusion', `${s.url}/v1/pas/exclusion?job_id=job_f`, '--job', 'job_f'], {
      FUSEGATE_API_KEY: key.secret,
    });
    expect(online.code, online.stderr).toBe(0);
    expect(online.out).toMatchObject({ verified: true, present: true });
  }, 90_000);
});

describe('the migration indexes spend leaves redeemed before the tree existed', () => {
  it("builds each key's tree once, with the root its spend leaves define", async () => {
    const db = createClient({ url: `file:${tempDir()}/old.db`, intMode: 'number' });
    try {
      await migrate(db);
      // Back to a database of before the exclusion trees, holding redeemed spend leaves.
      await db.execute("DELETE FROM schema_migrations WHERE version >= '0170' AND version < '0172'");
      await db.execute('DROP TABLE pas_exclusion_nodes');
      await db.execute('DROP TABLE pas_exclusion_trees');
      const jobs = { key_old_a: Array.from({ length: 300 }, (_, i) => `job_${i}`), key_old_b: ['job_only'] };
      for (const [k, ids] of Object.entries(jobs)) {
        for (const j of ids) {
          await db.execute({
            sql: 'INSERT INTO pas_spend_leaves (key_id, job_id, ticket_id, spend_fingerprint, redeemed_at) VALUES (?, ?, ?, ?, ?)',
            args: [k, j, `bt_${j}`, 'f', '2026-01-01T00:00:00.000Z'],
          });
        }
      }
      expect(await migrate(db)).toEqual(['0170_pas_exclusion_smt', '0171_pas_exclusion_backfill']);
      for (const [k, ids] of Object.entries(jobs)) {
        const head = await exclusionHead(remoteSql(db), k);
        expect(head.size).toBe(ids.length);
        expect(Buffer.from(head.root).toString('base64')).toBe(await spendLeafRoot(db, k));
        for (const j of [ids[0]!, ids.at(-1)!, 'job_never']) {
          const { proof } = await proveExclusion(remoteSql(db), k, j);
          const present = proof.leaf !== null && Buffer.from(proof.leaf).equals(jobKey(j));
          expect(present, `${k} ${j}`).toBe(j !== 'job_never');
        }
      }
      expect(await migrate(db)).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe('forged exclusion proofs are refused', () => {
  it('from the service answer, by the verifier and by hand', async () => {
    const absent = await proofOf('job_e');
    const present = await proofOf('job_f');
    const forgeries: Array<[string, string, ExclusionProofJson, Uint8Array | string]> = [];
    const add = (
      name: string,
      job: string,
      mutate: (p: ExclusionProofJson) => void,
      base = absent,
      trust: Uint8Array | string = publicRaw,
    ) => {
      const p = clone(base);
      mutate(p);
      forgeries.push([name, job, p, trust]);
    };
    const flip = (b64: string) => {
      const b = Buffer.from(b64, 'base64');
      b[b.length - 1]! ^= 1;
      return b.toString('base64');
    };
    // Claim a redeemed job is absent.
    add("relabelled: an absent job's proof for a present one", 'job_d', (p) => (p.job_id = 'job_d'));
    add(
      "leaf dropped from a present job's proof",
      'job_f',
      (p) => {
        delete p.proof.leaf;
        p.present = false;
        p.excluded = true;
      },
      present,
    );
    add('moved neighbour: the terminal leaf replaced by another redeemed job', 'job_e', (p) => {
      p.proof.leaf = sha(Buffer.from('job_h')).toString('base64');
    });
    add(
      'moved neighbour: a foreign key as the terminal leaf',
      'job_f',
      (p) => {
        p.proof.leaf = sha(Buffer.from('job_zz')).toString('base64');
        p.present = false;
        p.excluded = true;
      },
      present,
    );
    add(
      'gap: a sibling dropped',
      'job_f',
      (p) => {
        p.proof.siblings = p.proof.siblings.slice(1);
      },
      present,
    );
    add(
      'gap: the terminal moved up a level',
      'job_f',
      (p) => {
        p.proof.depth -= 1;
      },
      present,
    );
    add('a sibling hash flipped', 'job_e', (p) => {
      p.proof.siblings[0] = flip(p.proof.siblings[0]!);
    });
    add("another job's proof format", 'job_e', (p) => {
      p.proof.format = 'sorted-merkle';
    });
    add('signed note size edited', 'job_e', (p) => {
      p.checkpoint.note = p.checkpoint.note.replace('\n5\n', '\n6\n');
    });
    add('signed note root edited', 'job_e', (p) => {
      const root = p.checkpoint.note.split('\n')[2]!;
      p.checkpoint.note = p.checkpoint.note.replace(root, flip(root));
    });
    add('note signature missing', 'job_e', (p) => {
      p.checkpoint.note = p.checkpoint.note.split('\n\n')[0] + '\n\n';
    });
    add(
      'presence misstated',
      'job_f',
      (p) => {
        p.present = false;
        p.excluded = true;
      },
      present,
    );
    const stranger = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!;
    add('checked against a foreign key', 'job_e', () => undefined, absent, new Uint8Array(Buffer.from(stranger, 'base64url')));
    const logNote = await (await s.fetch('/api/v1/logs/receipts/checkpoint')).text();
    add('a log checkpoint signed by the same key in place of the exclusion note', 'job_e', (p) => {
      p.checkpoint.note = logNote;
    });
    expect(forgeries).toHaveLength(14);
    for (const [name, job, p, trust] of forgeries) {
      await expect(verifyExclusionProof(job, p, trust), name).rejects.toThrow();
      // By hand, a forgery either fails or tells the truth about the job, never the forger's claim.
      let hand: string;
      try {
        hand = checkByHand(job, p, trust instanceof Uint8Array ? trust : publicRaw);
      } catch {
        hand = 'refused';
      }
      expect(hand, name).toBe(hand === 'refused' ? 'refused' : JOBS.includes(job) || job === 'job_late' ? 'present' : 'absent');
      // The hand check reads no `present` field: only that misstatement gets past it (to the truth).
      if (hand !== 'refused') expect(name).toBe('presence misstated');
    }
  });

  it('signed by a forger over a tree that omits the leaf', async () => {
    // A forger with its own key builds a tree without job_f and signs it: the service key refuses it.
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
    const tree = await memoryTree(['job_b', 'job_d', 'job_h']);
    const origin = `gate.example/pas-exclusion-smt/${key.id}`;
    const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root }), origin, signerOf(privateKey));
    const p = exclusionProofJson('job_f', await tree.prove('job_f'), { origin, tree_size: tree.size, root_hash: '', note });
    expect((await verifyExclusionProof('job_f', p, raw)).present).toBe(false); // valid under the forger's own key...
    expect(checkByHand('job_f', p, raw)).toBe('absent');
    await expect(verifyExclusionProof('job_f', p, publicRaw)).rejects.toThrow(); // ...never under the service's
    expect(() => checkByHand('job_f', p, publicRaw)).toThrow();
  });

  it('at scale: absent jobs of a 10,000-leaf tree prove absence, members prove presence, and no member can be proven absent', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = new Uint8Array(Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url'));
    const ids = Array.from({ length: 10_000 }, (_, i) => `job_${String(i * 2).padStart(6, '0')}`);
    const tree = await memoryTree(ids);
    const origin = 'gate.example/pas-exclusion-smt/key_y';
    const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root }), origin, signerOf(privateKey));
    const head = { origin, tree_size: tree.size, root_hash: '', note };
    for (const i of [0, 1, 4_999, 9_998, 9_999]) {
      const odd = `job_${String(i * 2 + 1).padStart(6, '0')}`;
      const proof = exclusionProofJson(odd, await tree.prove(odd), head);
      expect((await verifyExclusionProof(odd, proof, raw)).present).toBe(false);
      expect(checkByHand(odd, proof, raw)).toBe('absent');
      const member = ids[i]!;
      const own = exclusionProofJson(member, await tree.prove(member), head);
      expect(checkByHand(member, own, raw)).toBe('present');
      // Reusing an absence proof for a member fails.
      await expect(verifyExclusionProof(member, { ...proof, job_id: member }, raw)).rejects.toThrow();
      expect(() => checkByHand(member, proof, raw)).toThrow();
    }
  });
});

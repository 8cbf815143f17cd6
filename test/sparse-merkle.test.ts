/**
 * Sparse Merkle trees: incremental inserts, the one-pass build and the
 * definition agree on every root; proofs verify with the module's verifier AND
 * with a second, straightforward implementation on node:crypto written here
 * from the definition in docs/exclusion-proofs.md; forged proofs fail both.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ZERO,
  buildTree,
  expectedDepth,
  planInsert,
  proofOfPath,
  sparseProofFromJson,
  sparseProofToJson,
  verifySparseProof,
  walkPath,
  type NodeReader,
  type SmtNode,
  type SparseProofJson,
} from '../src/crypto/sparse-merkle.ts';

// ---------------------------------------------------------------- the second implementation

const sha = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
};
const bit = (k: Uint8Array, i: number) => (k[Math.floor(i / 8)]! >> (7 - (i % 8))) & 1;

/** The root straight from the definition: recursive over the set of keys. */
function definitionRoot(keys: Buffer[], depth = 0): Buffer {
  if (keys.length === 0) return Buffer.alloc(32);
  if (keys.length === 1) return sha(Buffer.from([0]), keys[0]!);
  const left = keys.filter((k) => bit(k, depth) === 0);
  const right = keys.filter((k) => bit(k, depth) === 1);
  return sha(Buffer.from([1]), definitionRoot(left, depth + 1), definitionRoot(right, depth + 1));
}

/** Checks the JSON form of a proof for `key` against `root` by hand; returns 'present' | 'absent' | 'invalid'. */
function checkByHand(key: Buffer, p: SparseProofJson, root: Buffer): 'present' | 'absent' | 'invalid' {
  const bitmap = Buffer.from(p.bitmap, 'base64');
  if (bitmap.length !== Math.ceil(p.depth / 8)) return 'invalid';
  const given = p.siblings.map((s) => Buffer.from(s, 'base64'));
  const siblings: Buffer[] = [];
  for (let i = 0; i < p.depth; i++) siblings.push(bit(bitmap, i) ? (given.shift() ?? Buffer.alloc(0)) : Buffer.alloc(32));
  if (given.length !== 0 || siblings.some((s) => s.length !== 32)) return 'invalid';
  const leaf = p.leaf === undefined ? undefined : Buffer.from(p.leaf, 'base64');
  if (leaf) {
    if (leaf.length !== 32) return 'invalid';
    for (let i = 0; i < p.depth; i++) if (bit(leaf, i) !== bit(key, i)) return 'invalid';
  }
  let h: Buffer = leaf ? sha(Buffer.from([0]), leaf) : Buffer.alloc(32);
  for (let d = p.depth; d >= 1; d--) {
    h = bit(key, d - 1) ? sha(Buffer.from([1]), siblings[d - 1]!, h) : sha(Buffer.from([1]), h, siblings[d - 1]!);
  }
  if (!h.equals(root)) return 'invalid';
  return leaf?.equals(key) ? 'present' : 'absent';
}

// ---------------------------------------------------------------- an in-memory store

class MemoryTree {
  readonly nodes = new Map<string, SmtNode>();
  root: Uint8Array = ZERO;
  size = 0;
  read: NodeReader = async (ids) => ids.flatMap((id) => this.nodes.get(this.#id(id.depth, id.prefix)) ?? []);
  #id = (d: number, p: Uint8Array) => `${d}/${Buffer.from(p).toString('hex')}`;
  async insert(key: Uint8Array): Promise<void> {
    const plan = planInsert(key, await walkPath(this.read, key, expectedDepth(this.size)));
    for (const n of plan.nodes) this.nodes.set(this.#id(n.depth, n.prefix), n);
    this.root = plan.root;
    this.size++;
  }
  async prove(key: Uint8Array) {
    return proofOfPath(await walkPath(this.read, key, expectedDepth(this.size)));
  }
}

const keyOf = (s: string) => sha(Buffer.from(s));
/** A key equal to `base` except for bit `i` (and every bit after it set to `fill`). */
function near(base: Buffer, i: number, fill = 0): Buffer {
  const k = Buffer.from(base);
  k[Math.floor(i / 8)]! ^= 0x80 >> (i % 8);
  for (let j = i + 1; j < 256; j++) {
    const mask = 0x80 >> (j % 8);
    k[Math.floor(j / 8)] = fill ? k[Math.floor(j / 8)]! | mask : k[Math.floor(j / 8)]! & ~mask;
  }
  return k;
}

describe('sparse Merkle tree', () => {
  it('has the root of its definition after every insert, and the one-pass build agrees', async () => {
    const t = new MemoryTree();
    expect(Buffer.from(t.root).equals(definitionRoot([]))).toBe(true);
    const keys: Buffer[] = [];
    for (let i = 0; i < 300; i++) {
      const k = keyOf(`job_${i}`);
      keys.push(k);
      await t.insert(k);
      if (i < 20 || i % 37 === 0) expect(Buffer.from(t.root).toString('hex'), `after ${i + 1}`).toBe(definitionRoot(keys).toString('hex'));
    }
    expect(Buffer.from(t.root).toString('hex')).toBe(definitionRoot(keys).toString('hex'));
    const built: SmtNode[] = [];
    const root = await buildTree([...keys].sort(Buffer.compare), (n) => void built.push(n));
    expect(Buffer.from(root).toString('hex')).toBe(definitionRoot(keys).toString('hex'));
    // The same nodes, too: the build and the inserts store one tree.
    const asText = (ns: Iterable<SmtNode>) =>
      [...ns].map((n) => `${n.depth}/${Buffer.from(n.prefix).toString('hex')}/${Buffer.from(n.hash).toString('hex')}`).sort();
    expect(asText(built)).toEqual(asText(t.nodes.values()));
  });

  it('handles keys that share long prefixes, down to the last bit (paths past one read chunk)', async () => {
    const base = keyOf('deep');
    const keys = [base, near(base, 255), near(base, 200), near(base, 47), near(base, 48), near(base, 100, 1), keyOf('shallow')];
    const t = new MemoryTree();
    for (const k of keys) await t.insert(k);
    expect(Buffer.from(t.root).toString('hex')).toBe(definitionRoot(keys).toString('hex'));
    for (const k of keys) {
      const p = await t.prove(k);
      expect(verifySparseProof(k, p, t.root)).toBe(true);
      expect(checkByHand(k, sparseProofToJson(p), Buffer.from(t.root))).toBe('present');
    }
    const deepest = await t.prove(base);
    expect(deepest.depth).toBe(256);
    for (const q of [near(base, 254), near(base, 201), near(base, 100), near(base, 49, 1), keyOf('absent')]) {
      const p = await t.prove(q);
      expect(verifySparseProof(q, p, t.root)).toBe(false);
      expect(checkByHand(q, sparseProofToJson(p), Buffer.from(t.root))).toBe('absent');
    }
  });

  it('proves presence and absence that both implementations accept, in O(log n) siblings', async () => {
    const t = new MemoryTree();
    const keys = Array.from({ length: 2000 }, (_, i) => keyOf(`job_${i}`));
    for (const k of keys) await t.insert(k);
    const root = Buffer.from(t.root);
    for (let i = 0; i < 2000; i += 97) {
      const json = sparseProofToJson(await t.prove(keys[i]!));
      expect(verifySparseProof(keys[i]!, sparseProofFromJson(json), t.root)).toBe(true);
      expect(checkByHand(keys[i]!, json, root)).toBe('present');
      const q = keyOf(`absent_${i}`);
      const absent = sparseProofToJson(await t.prove(q));
      expect(verifySparseProof(q, sparseProofFromJson(absent), t.root)).toBe(false);
      expect(checkByHand(q, absent, root)).toBe('absent');
      expect(absent.depth).toBeLessThan(40);
    }
  });

  it('refuses forged proofs in both implementations', async () => {
    const t = new MemoryTree();
    const keys = Array.from({ length: 64 }, (_, i) => keyOf(`job_${i}`));
    for (const k of keys) await t.insert(k);
    const root = Buffer.from(t.root);
    const member = keys[5]!;
    const good = sparseProofToJson(await t.prove(member));
    const absentKey = keyOf('nobody');
    const absent = sparseProofToJson(await t.prove(absentKey));
    const flip = (b64: string) => {
      const b = Buffer.from(b64, 'base64');
      b[0]! ^= 1;
      return b.toString('base64');
    };
    const forgeries: Array<[string, Buffer, SparseProofJson]> = [
      // A member's own proof, with its leaf dropped, claims an empty terminal.
      ['member claimed absent (leaf dropped)', member, { ...good, leaf: undefined }],
      // One member's proof presented for another member.
      ["another key's proof (relabelled)", keys[6]!, good],
      ['sibling flipped', member, { ...good, siblings: [flip(good.siblings[0]!), ...good.siblings.slice(1)] }],
      ['sibling dropped (gap)', member, { ...good, siblings: good.siblings.slice(1) }],
      [
        'bitmap bit cleared',
        member,
        { ...good, bitmap: Buffer.from(Buffer.from(good.bitmap, 'base64').map((x, i) => (i === 0 ? x & 0x7f : x))).toString('base64') },
      ],
      [
        'terminal moved up',
        member,
        {
          ...good,
          depth: good.depth - 1,
          bitmap: Buffer.alloc(Math.ceil((good.depth - 1) / 8), 0xff).toString('base64'),
          siblings: good.siblings.slice(0, -1),
        },
      ],
      [
        'terminal moved down (extra empty sibling)',
        member,
        {
          ...good,
          depth: good.depth + 1,
          bitmap: Buffer.concat([Buffer.from(good.bitmap, 'base64'), Buffer.alloc(1)])
            .subarray(0, Math.ceil((good.depth + 1) / 8))
            .toString('base64'),
        },
      ],
      ['absence terminal replaced by a foreign leaf', absentKey, { ...absent, leaf: keyOf('foreign').toString('base64') }],
      ['absence proof of one key used for a member', member, absent],
    ];
    for (const [name, key, p] of forgeries) {
      expect(checkByHand(key, p, root), name).toBe('invalid');
      let verdict: boolean | 'threw';
      try {
        verdict = verifySparseProof(key, sparseProofFromJson(p), t.root);
      } catch {
        verdict = 'threw';
      }
      // A forgery never proves the member absent (nor anything else here).
      expect(verdict, name).toBe('threw');
    }
  });
});

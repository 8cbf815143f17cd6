/**
 * Sparse Merkle trees over 256-bit keys, with single-leaf shortcuts: the tree
 * of every 2^256 possible keys, where a key is a leaf or is absent, and whose
 * root proves both membership and NON-membership of any key in O(log n)
 * hashes. Storage-independent: the math reads stored nodes through a
 * `NodeReader`, so the same code serves a database and memory.
 *
 * A subtree is named by its depth d (0 = root) and the first d bits of its
 * keys (bit 0 is the most significant bit of byte 0; 0 goes left). Its hash:
 *
 *   no key        ZERO                                 (32 zero bytes)
 *   one key k     SHA-256(0x00 || k)                   (RFC 9162 leaf hash of k)
 *   two or more   SHA-256(0x01 || left || right)       (RFC 9162 node hash)
 *
 * So a key's leaf sits at the first depth where its subtree holds it alone,
 * about log2(n) deep, and the tree stores O(n) nodes (only non-empty ones).
 * A proof for key q walks from the root down q's path to the first subtree
 * that is empty or holds one key (its "terminal") and gives the hashes of the
 * siblings on the way; every sibling that is ZERO is left out and marked in a
 * bitmap. The verifier recomputes the root from the terminal upwards: q is
 * present when the terminal holds q itself, absent when it is empty or holds
 * another key sharing q's first `depth` bits. Any other claim needs a SHA-256
 * collision (a leaf's 33-byte preimage and a node's 65-byte one never meet,
 * and no known input hashes to ZERO).
 */
import { leafHash, nodeHash, type Hash } from './merkle.ts';
import { ProofError } from './proof-error.ts';
import { base64 as b64, fromBase64 } from './base64.ts';
import { equalBytes, toHex } from './bytes.ts';

export const KEY_BYTES = 32;
export const KEY_BITS = KEY_BYTES * 8;

/** The hash of an empty subtree, at any depth. */
export const ZERO: Hash = new Uint8Array(32);

/** Bit `d` of `key` (0 = most significant bit of byte 0). */
export function bitAt(key: Uint8Array, d: number): 0 | 1 {
  return ((key[d >> 3]! >> (7 - (d & 7))) & 1) as 0 | 1;
}

/** The first `depth` bits of `key`, as ceil(depth/8) bytes with the bits past `depth` cleared. */
export function prefixOf(key: Uint8Array, depth: number): Uint8Array {
  const out = new Uint8Array(key.subarray(0, (depth + 7) >> 3)); // a copy, also when `key` is a Buffer
  if (depth & 7) out[out.length - 1]! &= (0xff << (8 - (depth & 7))) & 0xff;
  return out;
}

/** The sibling of the subtree at (`depth`, prefix of `key`), depth >= 1: the same prefix with its last bit flipped. */
export function siblingPrefixOf(key: Uint8Array, depth: number): Uint8Array {
  const out = prefixOf(key, depth);
  out[(depth - 1) >> 3]! ^= 0x80 >> ((depth - 1) & 7);
  return out;
}

/** A stored (non-empty) subtree. `leaf` is its only key when it holds exactly one. */
export interface SmtNode {
  depth: number;
  prefix: Uint8Array;
  hash: Hash;
  leaf: Uint8Array | null;
}

export interface NodeId {
  depth: number;
  prefix: Uint8Array;
}

/** Reads the stored nodes among `ids` (absent ones are empty subtrees), all from one consistent state. */
export type NodeReader = (ids: NodeId[]) => Promise<SmtNode[]>;

const idKey = (depth: number, prefix: Uint8Array) => `${depth}/${toHex(prefix)}`;

/** Key `key`'s path: the branches from the root down, the terminal, and every sibling on the way. */
export interface Path {
  /** Depth of the terminal: the first subtree on the path that is empty or holds one key. */
  depth: number;
  /** The terminal; null when empty. */
  terminal: SmtNode | null;
  /** siblings[d - 1] is the sibling at depth d, for d = 1..depth; null when empty. */
  siblings: Array<SmtNode | null>;
}

/**
 * How many depths to read in one round trip for a tree of `size` random keys:
 * a path ends about log2(size) deep, and past log2(size) + 8 with odds of
 * about 1 in 256 (then a second round trip reads on).
 */
export function expectedDepth(size: number): number {
  return Math.min(KEY_BITS + 1, Math.ceil(Math.log2(size + 1)) + 8);
}

/** Walks `key`'s path from the root, reading nodes `chunk` depths at a time. */
export async function walkPath(read: NodeReader, key: Uint8Array, chunk = 48): Promise<Path> {
  const siblings: Array<SmtNode | null> = [];
  for (let from = 0; from <= KEY_BITS; from += chunk) {
    const to = Math.min(from + chunk, KEY_BITS + 1);
    const ids: NodeId[] = [];
    for (let d = from; d < to; d++) {
      ids.push({ depth: d, prefix: prefixOf(key, d) });
      if (d > 0) ids.push({ depth: d, prefix: siblingPrefixOf(key, d) });
    }
    const found = new Map((await read(ids)).map((n) => [idKey(n.depth, n.prefix), n]));
    for (let d = from; d < to; d++) {
      if (d > 0) siblings.push(found.get(idKey(d, siblingPrefixOf(key, d))) ?? null);
      const node = found.get(idKey(d, prefixOf(key, d))) ?? null;
      if (node === null || node.leaf !== null) return { depth: d, terminal: node, siblings };
    }
  }
  throw new Error('sparse Merkle tree: a path runs past 256 levels (the stored nodes are inconsistent)');
}

/** A proof for one key: the terminal's key (null when empty) and the sibling hashes from depth 1 down to `depth` (ZERO for empty ones). */
export interface SparseProof {
  depth: number;
  siblings: Hash[];
  leaf: Uint8Array | null;
}

export function proofOfPath(path: Path): SparseProof {
  return { depth: path.depth, siblings: path.siblings.map((s) => s?.hash ?? ZERO), leaf: path.terminal?.leaf ?? null };
}

/** The root that `proof` recomputes for `key`: the terminal hashed up with its siblings. */
export function rootFromProof(key: Uint8Array, proof: SparseProof): Hash {
  let h = proof.leaf === null ? ZERO : leafHash(proof.leaf);
  for (let d = proof.depth; d >= 1; d--) {
    const s = proof.siblings[d - 1]!;
    h = bitAt(key, d - 1) ? nodeHash(s, h) : nodeHash(h, s);
  }
  return h;
}

/**
 * Checks `proof` for `key` against a trusted root (from a signed note).
 * Returns whether the key is present; throws ProofError when the proof does
 * not hold.
 */
export function verifySparseProof(key: Uint8Array, proof: SparseProof, root: Hash): boolean {
  if (key.length !== KEY_BYTES) throw new ProofError('a key is 32 bytes');
  if (!Number.isInteger(proof.depth) || proof.depth < 0 || proof.depth > KEY_BITS) throw new ProofError('depth out of range');
  if (proof.siblings.length !== proof.depth || proof.siblings.some((s) => s.length !== 32))
    throw new ProofError('one 32-byte sibling per level');
  const present = proof.leaf !== null && equalBytes(proof.leaf, key);
  if (proof.leaf !== null && !present) {
    if (proof.leaf.length !== KEY_BYTES) throw new ProofError('the terminal leaf is not a 32-byte key');
    // Another key may end the path only where it shares the path so far.
    if (!equalBytes(prefixOf(proof.leaf, proof.depth), prefixOf(key, proof.depth)))
      throw new ProofError("the terminal leaf is not on the key's path");
  }
  if (!equalBytes(rootFromProof(key, proof), root)) throw new ProofError('the proof does not recompute the signed root');
  return present;
}

/** What inserting one key writes: the new or changed nodes, and the new root. */
export interface InsertPlan {
  nodes: SmtNode[];
  root: Hash;
}

/** Plans the insert of `key` (absent from the tree) given its path; O(depth) hashes. */
export function planInsert(key: Uint8Array, path: Path): InsertPlan {
  const nodes: SmtNode[] = [];
  const put = (depth: number, hash: Hash, leaf: Uint8Array | null, k = key) =>
    nodes.push({ depth, prefix: prefixOf(k, depth), hash, leaf });
  const { depth: top, terminal } = path;
  let h: Hash;
  if (terminal === null) {
    h = leafHash(key);
    put(top, h, key);
  } else {
    const other = terminal.leaf!;
    if (equalBytes(other, key)) throw new Error('the key is already a leaf');
    // Both keys now share the subtree at `top`: push them down to the first bit where they differ.
    let c = top;
    while (bitAt(key, c) === bitAt(other, c)) c++;
    const mine = leafHash(key);
    const theirs = leafHash(other);
    put(c + 1, mine, key);
    put(c + 1, theirs, other, other);
    h = bitAt(key, c) ? nodeHash(theirs, mine) : nodeHash(mine, theirs);
    put(c, h, null);
    for (let d = c - 1; d >= top; d--) {
      h = bitAt(key, d) ? nodeHash(ZERO, h) : nodeHash(h, ZERO);
      put(d, h, null);
    }
  }
  for (let d = top - 1; d >= 0; d--) {
    const s = path.siblings[d]?.hash ?? ZERO;
    h = bitAt(key, d) ? nodeHash(s, h) : nodeHash(h, s);
    put(d, h, null);
  }
  return { nodes, root: h };
}

/**
 * Builds the whole tree of `keys` (sorted ascending byte-wise, distinct) in
 * one pass, emitting every node as it is made (so a caller can stream them
 * to storage; `emit` may return a promise to wait on); O(n) hashes for random
 * keys. Returns the root.
 */
export async function buildTree(keys: readonly Uint8Array[], emit: (node: SmtNode) => void | Promise<void>): Promise<Hash> {
  const build = async (lo: number, hi: number, depth: number): Promise<Hash> => {
    if (hi === lo) return ZERO;
    const first = keys[lo]!;
    if (hi - lo === 1) {
      const h = leafHash(first);
      await emit({ depth, prefix: prefixOf(first, depth), hash: h, leaf: first });
      return h;
    }
    if (depth >= KEY_BITS) throw new Error('duplicate keys');
    // Keys are sorted, so those with bit `depth` set form a suffix of [lo, hi).
    let a = lo;
    let b = hi;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (bitAt(keys[mid]!, depth)) b = mid;
      else a = mid + 1;
    }
    const h = nodeHash(await build(lo, a, depth + 1), await build(a, hi, depth + 1));
    await emit({ depth, prefix: prefixOf(first, depth), hash: h, leaf: null });
    return h;
  };
  return build(0, keys.length, 0);
}

// ---------------------------------------------------------------- JSON form

/**
 * `siblings` lists only the non-empty sibling hashes (base64), from depth 1
 * down; bit i of `bitmap` (most significant bit of byte 0 first) is 1 when the
 * sibling at depth i + 1 is among them, 0 when it is ZERO.
 */
export interface SparseProofJson {
  depth: number;
  bitmap: string;
  siblings: string[];
  /** base64 of the terminal's only key; absent when the terminal is empty. */
  leaf?: string;
}

/** Strict base64, refused as a malformed proof. */
function unb64(s: string): Uint8Array {
  try {
    return fromBase64(s);
  } catch {
    throw new ProofError('malformed proof: a value is not canonical base64');
  }
}

export function sparseProofToJson(p: SparseProof): SparseProofJson {
  const bitmap = new Uint8Array((p.depth + 7) >> 3);
  const siblings: string[] = [];
  p.siblings.forEach((s, i) => {
    if (equalBytes(s, ZERO)) return;
    bitmap[i >> 3]! |= 0x80 >> (i & 7);
    siblings.push(b64(s));
  });
  return { depth: p.depth, bitmap: b64(bitmap), siblings, ...(p.leaf ? { leaf: b64(p.leaf) } : {}) };
}

/** Parses the JSON form strictly; throws ProofError on anything malformed. */
export function sparseProofFromJson(j: SparseProofJson): SparseProof {
  if (j === null || typeof j !== 'object') throw new ProofError('malformed proof');
  const { depth, bitmap, siblings, leaf } = j;
  if (!Number.isInteger(depth) || depth < 0 || depth > KEY_BITS) throw new ProofError('depth out of range');
  if (typeof bitmap !== 'string' || !Array.isArray(siblings) || siblings.some((s) => typeof s !== 'string'))
    throw new ProofError('malformed proof');
  if (leaf !== undefined && typeof leaf !== 'string') throw new ProofError('malformed proof');
  const bits = unb64(bitmap);
  if (bits.length !== (depth + 7) >> 3) throw new ProofError('bitmap length does not match depth');
  const out: Hash[] = [];
  let next = 0;
  for (let i = 0; i < depth; i++) {
    if (!bitAt(bits, i)) {
      out.push(ZERO);
      continue;
    }
    const s = siblings[next++];
    if (s === undefined) throw new ProofError('fewer siblings than the bitmap marks');
    out.push(unb64(s));
  }
  if (next !== siblings.length) throw new ProofError('more siblings than the bitmap marks');
  if (depth & 7 && bits[bits.length - 1]! & (0xff >> (depth & 7))) throw new ProofError('bitmap has bits past depth');
  return { depth, siblings: out, leaf: leaf === undefined ? null : unb64(leaf) };
}

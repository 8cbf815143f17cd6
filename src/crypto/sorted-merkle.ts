/**
 * Sorted Merkle trees: an RFC 9162 tree whose leaves are distinct keys in
 * ascending byte order. Besides inclusion, it proves ABSENCE: a key that is not
 * a leaf falls strictly between two ADJACENT leaves (indexes i and i+1), or
 * before the first, or after the last; each neighbour carries its inclusion
 * proof against the same root, so a verifier needs nothing but the root.
 *
 * Used for absence witnesses (a declared act surface; PAS exclusion proofs use
 * the sparse tree of src/crypto/sparse-merkle.ts, updated in place). Leaf data
 * is the key's bytes; hashes are RFC 9162.
 */
import { emptyRoot, foldRange, leafHash, nodeHash, proveInclusion, rangeNodes, verifyInclusion, type Hash } from './merkle.ts';
import { ProofError } from './proof-error.ts';
import { base64 as b64, fromBase64 } from './base64.ts';
import { compareBytes } from './bytes.ts';

export interface LeafWitness {
  /** The neighbour's key (the leaf data). */
  key: Uint8Array;
  index: number;
  /** Inclusion proof of `key` at `index`, leaf upwards. */
  hashes: Hash[];
}

export type SortedProof =
  | { present: true; size: number; leaf: LeafWitness }
  | { present: false; size: number; left?: LeafWitness | undefined; right?: LeafWitness | undefined };

export class SortedMerkleTree {
  readonly keys: readonly Uint8Array[];
  /** levels[0] are leaf hashes; levels[k][i] is the perfect subtree over leaves [i·2^k, (i+1)·2^k). */
  readonly #levels: Hash[][];

  /** `keys` in any order; duplicates are dropped. */
  constructor(keys: Iterable<Uint8Array>) {
    const sorted = [...keys].sort(compareBytes);
    this.keys = sorted.filter((k, i) => i === 0 || compareBytes(sorted[i - 1]!, k) !== 0);
    const levels: Hash[][] = [this.keys.map((k) => leafHash(k))];
    for (let below = levels[0]!; below.length > 1;) {
      const up: Hash[] = [];
      for (let i = 0; i + 1 < below.length; i += 2) up.push(nodeHash(below[i]!, below[i + 1]!));
      levels.push(up);
      below = up;
    }
    this.#levels = levels;
  }

  get size(): number {
    return this.keys.length;
  }

  #range(lo: number, hi: number): Hash {
    return foldRange(rangeNodes(lo, hi).map((n) => this.#levels[n.level]![n.index]!));
  }

  root(): Hash {
    return this.size === 0 ? emptyRoot() : this.#range(0, this.size);
  }

  head(): { size: number; root: Hash } {
    return { size: this.size, root: this.root() };
  }

  #witness(index: number): LeafWitness {
    return { key: this.keys[index]!, index, hashes: proveInclusion(index, this.size).map((r) => this.#range(r.lo, r.hi)) };
  }

  /** Index of the first key >= `key`. */
  #lowerBound(key: Uint8Array): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(this.keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Proof of inclusion when `key` is a leaf, of absence otherwise. */
  prove(key: Uint8Array): SortedProof {
    const i = this.#lowerBound(key);
    if (i < this.size && compareBytes(this.keys[i]!, key) === 0) return { present: true, size: this.size, leaf: this.#witness(i) };
    return {
      present: false,
      size: this.size,
      left: i > 0 ? this.#witness(i - 1) : undefined,
      right: i < this.size ? this.#witness(i) : undefined,
    };
  }
}

function checkLeaf(w: LeafWitness, size: number, root: Hash): void {
  verifyInclusion(w.index, size, leafHash(w.key), w.hashes, root);
}

/**
 * Checks `proof` for `key` against a trusted tree head (size AND root, as a
 * signed checkpoint gives them: an inclusion proof alone does not pin the size,
 * and absence at the edges depends on it). Returns whether the key is present;
 * throws ProofError when the proof does not hold (forged neighbours, a gap...).
 */
export function verifySortedProof(key: Uint8Array, proof: SortedProof, head: { size: number; root: Hash }): boolean {
  const { size, root } = head;
  if (proof.size !== size) throw new ProofError(`proof is for size ${proof.size}, the trusted head has ${size}`);
  if (proof.present) {
    if (compareBytes(proof.leaf.key, key) !== 0) throw new ProofError('the proven leaf is not the key');
    checkLeaf(proof.leaf, size, root);
    return true;
  }
  const { left, right } = proof;
  if (size === 0) {
    if (left || right) throw new ProofError('an empty tree has no neighbours');
    if (root.length !== 32 || compareBytes(root, emptyRoot()) !== 0) throw new ProofError('root is not the empty tree');
    return false;
  }
  if (!left && !right) throw new ProofError('absence in a non-empty tree needs a neighbour');
  if (left) {
    checkLeaf(left, size, root);
    if (compareBytes(left.key, key) >= 0) throw new ProofError('left neighbour is not below the key');
    if (!right && left.index !== size - 1) throw new ProofError('left neighbour is not the last leaf');
  }
  if (right) {
    checkLeaf(right, size, root);
    if (compareBytes(key, right.key) >= 0) throw new ProofError('right neighbour is not above the key');
    if (!left && right.index !== 0) throw new ProofError('right neighbour is not the first leaf');
  }
  if (left && right && right.index !== left.index + 1) throw new ProofError('neighbours are not adjacent');
  return false;
}

/** JSON form of a witness: key as UTF-8 text when `text`, else base64; hashes base64. */
export interface LeafWitnessJson {
  key: string;
  index: number;
  hashes: string[];
}

export type SortedProofJson =
  | { present: true; tree_size: number; leaf: LeafWitnessJson }
  | { present: false; tree_size: number; left?: LeafWitnessJson; right?: LeafWitnessJson };

export function proofToJson(p: SortedProof, keyToString: (k: Uint8Array) => string = b64): SortedProofJson {
  const w = (x: LeafWitness): LeafWitnessJson => ({ key: keyToString(x.key), index: x.index, hashes: x.hashes.map(b64) });
  if (p.present) return { present: true, tree_size: p.size, leaf: w(p.leaf) };
  return { present: false, tree_size: p.size, ...(p.left ? { left: w(p.left) } : {}), ...(p.right ? { right: w(p.right) } : {}) };
}

export function proofFromJson(j: SortedProofJson, keyFromString: (s: string) => Uint8Array = fromBase64): SortedProof {
  const w = (x: LeafWitnessJson): LeafWitness => ({ key: keyFromString(x.key), index: x.index, hashes: x.hashes.map(fromBase64) });
  if (j.present) return { present: true, size: j.tree_size, leaf: w(j.leaf) };
  return { present: false, size: j.tree_size, left: j.left ? w(j.left) : undefined, right: j.right ? w(j.right) : undefined };
}

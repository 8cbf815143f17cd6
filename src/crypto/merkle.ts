/**
 * Merkle tree math of RFC 9162 (Certificate Transparency 2.0) §2.1, which is
 * that of RFC 6962: proofs made here verify with any RFC 6962/9162 verifier
 * (Go's golang.org/x/mod/sumdb/tlog, transparency-dev/merkle, sigstore).
 *
 * Storage-independent: proofs are first planned as lists of leaf ranges
 * [lo, hi) whose subtree hashes are needed; `rangeNodes` names the stored
 * perfect subtrees that make up a range, so a log that keeps every perfect
 * subtree hash answers any head or proof from O(log n) stored hashes, and a
 * `HashReader` hands the math the hashes of the ranges it plans. Platform-neutral:
 * SHA-256 is the installed one (src/crypto/platform.ts).
 */
import { equalBytes } from './bytes.ts';
import { sha256 } from './platform.ts';
import { ProofError } from './proof-error.ts';

export type Hash = Uint8Array;

/**
 * The input of leafHash, reused (the hash is synchronous and keeps nothing of
 * its input): a fresh array per leaf costs an allocation that a log append
 * would pay once per entry. It grows to the longest entry hashed.
 */
let leafInput = new Uint8Array(1024);

/** RFC 9162 §2.1.1: the hash of a leaf, SHA-256(0x00 || data). */
export function leafHash(data: Uint8Array): Hash {
  if (data.length + 1 > leafInput.length) leafInput = new Uint8Array(Math.max(data.length + 1, leafInput.length * 2));
  leafInput[0] = 0x00;
  leafInput.set(data, 1);
  return sha256(leafInput.subarray(0, data.length + 1));
}

/** Reused by every nodeHash: the hash is synchronous and keeps nothing of its input. */
const nodeInput = new Uint8Array(65);
nodeInput[0] = 0x01;

/** RFC 9162 §2.1.1: the hash of an interior node, SHA-256(0x01 || left || right). */
export function nodeHash(left: Hash, right: Hash): Hash {
  if (left.length !== 32 || right.length !== 32) {
    // A proof from outside may carry a hash of another length: it is hashed as given, and fails to verify.
    const input = new Uint8Array(1 + left.length + right.length);
    input[0] = 0x01;
    input.set(left, 1);
    input.set(right, 1 + left.length);
    return sha256(input);
  }
  nodeInput.set(left, 1);
  nodeInput.set(right, 33);
  return sha256(nodeInput);
}

/** The hash of the empty tree, SHA-256(""). */
export function emptyRoot(): Hash {
  return sha256(new Uint8Array(0));
}

/*
 * Index arithmetic is plain division and remainder, never 32-bit bit
 * operations (`&`, `>>>` truncate to 32 bits): exact for every size up to 2^53.
 */
const isPowerOfTwo = (n: number) => n >= 1 && 2 ** Math.round(Math.log2(n)) === n;
const half = (n: number) => Math.floor(n / 2);
const isOdd = (n: number) => n % 2 === 1;

/** The largest power of two strictly less than n (n > 1). */
function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** A stored perfect subtree: `level` 0 is a leaf; it covers leaves [index·2^level, (index+1)·2^level). */
export interface NodeId {
  level: number;
  index: number;
}

/** A half-open range of leaves whose subtree hash (MTH) a proof needs. */
export interface LeafRange {
  lo: number;
  hi: number;
}

/**
 * Where the math reads the subtree hashes a proof needs, as Go's
 * sumdb/tlog reads its stored hashes through `HashReader.ReadHashes`: the math
 * never names the storage (a database's tiles, a group's leaves in memory).
 * Ours reads by leaf range rather than by stored node, so that a reader may
 * keep the hash of a range that is not a perfect subtree (the right edge of a
 * tree) as well; `rangeNodes` says which stored nodes make up a range.
 */
export interface HashReader {
  /** MTH(D[lo:hi]) of each range, in the same order. */
  readHashes(ranges: readonly LeafRange[]): Hash[];
}

/**
 * The perfect subtrees that make up the RFC 9162 subtree D[lo:hi], left to right,
 * in decreasing size. Folding their hashes from the right gives MTH(D[lo:hi]).
 */
export function rangeNodes(lo: number, hi: number): NodeId[] {
  const out: NodeId[] = [];
  while (lo < hi) {
    const n = hi - lo;
    const size = isPowerOfTwo(n) ? n : splitPoint(n);
    const level = Math.log2(size);
    out.push({ level, index: lo / size });
    lo += size;
  }
  return out;
}

/** Folds the hashes of `rangeNodes(lo, hi)` (same order) into MTH(D[lo:hi]). */
export function foldRange(hashes: Hash[]): Hash {
  if (hashes.length === 0) return emptyRoot();
  let h = hashes[hashes.length - 1]!;
  for (let i = hashes.length - 2; i >= 0; i--) h = nodeHash(hashes[i]!, h);
  return h;
}

/** RFC 9162 §2.1.3.1: the ranges whose hashes form the inclusion proof of leaf m in a tree of size n. */
export function proveInclusion(m: number, n: number): LeafRange[] {
  if (!(Number.isInteger(m) && Number.isInteger(n) && m >= 0 && m < n)) {
    throw new RangeError(`no inclusion proof for index ${m} in a tree of size ${n}`);
  }
  const path: LeafRange[] = [];
  let lo = 0;
  let hi = n;
  const stack: LeafRange[] = [];
  while (hi - lo > 1) {
    const k = splitPoint(hi - lo);
    if (m < lo + k) {
      stack.push({ lo: lo + k, hi });
      hi = lo + k;
    } else {
      stack.push({ lo, hi: lo + k });
      lo = lo + k;
    }
  }
  // The proof lists siblings from the leaf upwards.
  while (stack.length) path.push(stack.pop()!);
  return path;
}

/** RFC 9162 §2.1.4.1: the ranges whose hashes form the consistency proof from size m to size n. */
export function proveConsistency(m: number, n: number): LeafRange[] {
  if (!(Number.isInteger(m) && Number.isInteger(n) && m > 0 && m <= n)) {
    throw new RangeError(`no consistency proof from size ${m} to size ${n}`);
  }
  const out: LeafRange[] = [];
  const sub = (mm: number, lo: number, hi: number, complete: boolean): void => {
    if (mm === hi - lo) {
      if (!complete) out.push({ lo, hi });
      return;
    }
    const k = splitPoint(hi - lo);
    if (mm <= k) {
      sub(mm, lo, lo + k, complete);
      out.push({ lo: lo + k, hi });
    } else {
      sub(mm - k, lo + k, hi, false);
      out.push({ lo, hi: lo + k });
    }
  };
  sub(m, 0, n, true);
  return out;
}

/**
 * RFC 9162 §2.1.3.2: checks that `leaf` (a leaf hash) sits at `index` in the
 * tree of `size` with root `root`. Throws ProofError when it does not.
 */
export function verifyInclusion(index: number, size: number, leaf: Hash, proof: Hash[], root: Hash): void {
  if (root.length !== 32) throw new ProofError('hashes must be 32 bytes');
  if (!equalBytes(inclusionRoot(index, size, leaf, proof), root)) throw new ProofError('computed root does not match');
}

/**
 * RFC 9162 §2.1.3.2 without the final comparison: the root an inclusion proof
 * leads to (what a COSE receipt's detached payload is). Throws ProofError on a
 * malformed proof.
 */
export function inclusionRoot(index: number, size: number, leaf: Hash, proof: Hash[]): Hash {
  if (!(Number.isInteger(index) && Number.isInteger(size)) || index < 0 || index >= size) {
    throw new ProofError(`index ${index} is beyond tree size ${size}`);
  }
  if (leaf.length !== 32 || proof.some((p) => p.length !== 32)) {
    throw new ProofError('hashes must be 32 bytes');
  }
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) throw new ProofError('proof is longer than the path');
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new ProofError('proof is shorter than the path');
  return r;
}

/**
 * RFC 9162 §2.1.4.2: checks that the tree of size1 with root1 is a prefix of
 * the tree of size2 with root2. Throws ProofError when it is not.
 */
export function verifyConsistency(size1: number, size2: number, proof: Hash[], root1: Hash, root2: Hash): void {
  if (!(Number.isInteger(size1) && Number.isInteger(size2)) || size1 < 1 || size2 < size1) {
    throw new ProofError(`no consistency between sizes ${size1} and ${size2}`);
  }
  if (size1 === size2) {
    if (proof.length !== 0) throw new ProofError('proof must be empty for equal sizes');
    if (!equalBytes(root1, root2)) throw new ProofError('roots differ for equal sizes');
    return;
  }
  if (root1.length !== 32 || root2.length !== 32 || proof.some((p) => p.length !== 32)) {
    throw new ProofError('hashes must be 32 bytes');
  }
  if (proof.length === 0) throw new ProofError('empty proof');
  let path = proof;
  // If size1 is a power of two, the proof omits the old root: it starts the path.
  if (isPowerOfTwo(size1)) path = [root1, ...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) throw new ProofError('proof is longer than the path');
    if (isOdd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new ProofError('proof is shorter than the path');
  if (!equalBytes(fr, root1)) throw new ProofError('computed old root does not match');
  if (!equalBytes(sr, root2)) throw new ProofError('computed new root does not match');
}

/** Root of a list of leaf hashes, computed directly (for tests and small trees only). */
export function rootOf(leaves: Hash[]): Hash {
  if (leaves.length === 0) return emptyRoot();
  if (leaves.length === 1) return leaves[0]!;
  const k = splitPoint(leaves.length);
  return nodeHash(rootOf(leaves.slice(0, k)), rootOf(leaves.slice(k)));
}

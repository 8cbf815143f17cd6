import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  foldRange,
  leafHash,
  nodeHash,
  proveConsistency,
  proveInclusion,
  rangeNodes,
  rootOf,
  verifyConsistency,
  verifyInclusion,
  type Hash,
  type LeafRange,
} from '../src/crypto/merkle.ts';

/** Published vectors carried in the repository (test/vectors/SOURCES.md says where each comes from). */
const VECTORS = fileURLToPath(new URL('./vectors/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.json') ? [p] : [];
  });
}

const b64 = (s: string | null | undefined): Uint8Array => (s ? new Uint8Array(Buffer.from(s, 'base64')) : new Uint8Array());

describe('RFC 9162 Merkle math against published vectors', () => {
  const ref = JSON.parse(readFileSync(join(VECTORS, 'rfc6962-reference-tree.json'), 'utf8')) as {
    leafInputsHex: string[];
    leafHashesHex: string[];
    rootHashesHexByTreeSize: Record<string, string> | string[];
  };
  const leaves = ref.leafInputsHex.map((h) => leafHash(Buffer.from(h, 'hex')));

  it('computes the reference leaf hashes and roots for every size 0..8', () => {
    expect(leaves.map((l) => Buffer.from(l).toString('hex'))).toEqual(ref.leafHashesHex);
    const roots = ref.rootHashesHexByTreeSize as Record<string, string>;
    for (let n = 0; n <= 8; n++) {
      expect(Buffer.from(rootOf(leaves.slice(0, n))).toString('hex'), `size ${n}`).toBe(roots[String(n)]);
    }
  });

  it('hashes a node of any two inputs as SHA-256(0x01 || left || right), a proof hash of the wrong length included', () => {
    for (const [l, r] of [
      [32, 32],
      [31, 32],
      [32, 0],
      [33, 33],
    ] as const) {
      const left = new Uint8Array(l).fill(7);
      const right = new Uint8Array(r).fill(9);
      expect(Buffer.from(nodeHash(left, right)).toString('hex')).toBe(bytesToHex(sha256(new Uint8Array([0x01, ...left, ...right]))));
    }
    // The same hashes twice in a row: nothing of one call is left in the next.
    expect(Buffer.from(nodeHash(leaves[0]!, leaves[1]!)).equals(Buffer.from(nodeHash(leaves[0]!, leaves[1]!)))).toBe(true);
  });

  const resolve = (ranges: LeafRange[]): Hash[] =>
    ranges.map((r) =>
      foldRange(
        rangeNodes(r.lo, r.hi).map((node) => rootOf(leaves.slice(node.index * 2 ** node.level, (node.index + 1) * 2 ** node.level))),
      ),
    );

  it('makes inclusion and consistency proofs that verify for every pair in the reference tree', () => {
    for (let n = 1; n <= 8; n++) {
      const root = rootOf(leaves.slice(0, n));
      for (let m = 0; m < n; m++) verifyInclusion(m, n, leaves[m]!, resolve(proveInclusion(m, n)), root);
      for (let m = 1; m <= n; m++) verifyConsistency(m, n, resolve(proveConsistency(m, n)), rootOf(leaves.slice(0, m)), root);
    }
  });

  const inclusion = files(join(VECTORS, 'transparency-dev-merkle/inclusion'));
  it(`agrees with all ${inclusion.length} transparency-dev inclusion probes`, () => {
    expect(inclusion.length).toBeGreaterThanOrEqual(98);
    for (const f of inclusion) {
      const v = JSON.parse(readFileSync(f, 'utf8'));
      const run = () => verifyInclusion(v.leafIdx, v.treeSize, b64(v.leafHash), (v.proof ?? []).map(b64), b64(v.root));
      if (v.wantErr) expect(run, f).toThrow();
      else expect(run, f).not.toThrow();
    }
  });

  const consistency = files(join(VECTORS, 'transparency-dev-merkle/consistency'));
  it(`agrees with all ${consistency.length} transparency-dev consistency probes`, () => {
    expect(consistency.length).toBeGreaterThanOrEqual(98);
    for (const f of consistency) {
      const v = JSON.parse(readFileSync(f, 'utf8'));
      const run = () => verifyConsistency(v.size1, v.size2, (v.proof ?? []).map(b64), b64(v.root1), b64(v.root2));
      if (v.wantErr) expect(run, f).toThrow();
      else expect(run, f).not.toThrow();
    }
  });

  it('rejects a tampered leaf, root or proof', () => {
    const root = rootOf(leaves);
    const proof = resolve(proveInclusion(5, 8));
    const flip = (h: Hash) => Uint8Array.from(h, (b, i) => (i === 0 ? b ^ 1 : b));
    expect(() => verifyInclusion(5, 8, flip(leaves[5]!), proof, root)).toThrow();
    expect(() => verifyInclusion(5, 8, leaves[5]!, proof, flip(root))).toThrow();
    expect(() => verifyInclusion(5, 8, leaves[5]!, [flip(proof[0]!), ...proof.slice(1)], root)).toThrow();
    expect(() => verifyInclusion(4, 8, leaves[5]!, proof, root)).toThrow();
    expect(nodeHash(leaves[0]!, leaves[1]!)).not.toEqual(nodeHash(leaves[1]!, leaves[0]!));
  });
});

import { describe, expect, it } from 'vitest';
import { leafHash, rootOf } from '../src/crypto/merkle.ts';
import { ProofError } from '../src/crypto/proof-error.ts';
import { SortedMerkleTree, proofFromJson, proofToJson, verifySortedProof, type SortedProof } from '../src/crypto/sorted-merkle.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

describe('sorted Merkle tree', () => {
  const words = ['pay', 'bind', 'wire', 'hire', 'quote', 'refund', 'issue', 'cancel', 'endorse'];
  const tree = new SortedMerkleTree(words.map(enc));

  it('sorts and deduplicates keys byte-wise and has the RFC 9162 root of the sorted leaves', () => {
    const t = new SortedMerkleTree(['b', 'a', 'b', 'é', 'z'].map(enc));
    // 'é' (0xC3 0xA9) sorts after 'z' byte-wise.
    expect(t.keys.map(dec)).toEqual(['a', 'b', 'z', 'é']);
    expect(Buffer.from(t.root())).toEqual(Buffer.from(rootOf(t.keys.map((k) => leafHash(k)))));
  });

  it('proves presence and absence for every key around every leaf, and each proof verifies', () => {
    const root = tree.head();
    for (const w of words) expect(verifySortedProof(enc(w), tree.prove(enc(w)), root)).toBe(true);
    for (const w of ['a', 'zzz', 'c', 'payx', 'j', 'bin', 'wirf']) {
      const p = tree.prove(enc(w));
      expect(p.present).toBe(false);
      expect(verifySortedProof(enc(w), p, root)).toBe(false);
      // The JSON form round-trips.
      expect(verifySortedProof(enc(w), proofFromJson(proofToJson(p, dec), enc), root)).toBe(false);
    }
  });

  it('handles the empty and the one-leaf tree', () => {
    const empty = new SortedMerkleTree([]);
    expect(verifySortedProof(enc('x'), empty.prove(enc('x')), empty.head())).toBe(false);
    const one = new SortedMerkleTree([enc('m')]);
    expect(verifySortedProof(enc('a'), one.prove(enc('a')), one.head())).toBe(false);
    expect(verifySortedProof(enc('z'), one.prove(enc('z')), one.head())).toBe(false);
    expect(verifySortedProof(enc('m'), one.prove(enc('m')), one.head())).toBe(true);
  });

  it('rejects forged proofs', () => {
    const root = tree.head();
    const absent = tree.prove(enc('pb')) as Extract<SortedProof, { present: false }>;
    const leafOf = (w: string) => (tree.prove(enc(w)) as Extract<SortedProof, { present: true }>).leaf;
    const present = tree.prove(enc('pay')) as Extract<SortedProof, { present: true }>;
    const forgeries: Array<[string, SortedProof, Uint8Array]> = [
      // Claim absence of a key that is present, with non-adjacent neighbours around it.
      ['skips a leaf', { present: false, size: tree.size, left: leafOf('issue'), right: leafOf('quote') }, enc('pay')],
      ['drops the left neighbour', { present: false, size: tree.size, right: absent.right }, enc('pb')],
      ['drops the right neighbour', { present: false, size: tree.size, left: absent.left }, enc('pb')],
      ['changes a neighbour key', { ...absent, left: { ...absent.left!, key: enc('pa') } }, enc('pb')],
      ['claims another tree size', { ...absent, size: tree.size + 1 }, enc('pb')],
      [
        'tampers a hash',
        { ...absent, right: { ...absent.right!, hashes: absent.right!.hashes.map((h, i) => (i === 0 ? new Uint8Array(32) : h)) } },
        enc('pb'),
      ],
      ['neighbours on the wrong side', absent, enc('zzz')],
      ['presence of another key', present, enc('pax')],
    ];
    for (const [name, proof, key] of forgeries) {
      expect(() => verifySortedProof(key, proof, root), name).toThrow(ProofError);
    }
    // A head that claims one more leaf turns the last leaf into a non-edge: refused.
    const last = tree.prove(enc('zzz'));
    expect(() => verifySortedProof(enc('zzz'), { ...last, size: tree.size + 1 }, { size: tree.size + 1, root: root.root })).toThrow(
      ProofError,
    );
    // An honest proof against another root fails too.
    expect(() => verifySortedProof(enc('pb'), absent, { size: tree.size, root: new SortedMerkleTree([enc('x')]).root() })).toThrow(
      ProofError,
    );
  });
});

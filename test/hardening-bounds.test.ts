import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { leafHash, nodeHash, proveInclusion, rangeNodes, verifyInclusion, type Hash } from '../src/crypto/merkle.ts';
import { parseCheckpointText } from '../src/crypto/note.ts';

const h = (s: string): Hash => createHash('sha256').update(s).digest();

/** Reference split point with BigInt: the largest power of two strictly below n. */
function split(n: bigint): bigint {
  let k = 1n;
  while (k * 2n < n) k *= 2n;
  return k;
}

describe('Merkle index arithmetic past 2^32', () => {
  it('rangeNodes(0, 2^32 + 2) is a level-32 subtree and a level-1 subtree', () => {
    expect(rangeNodes(0, 2 ** 32 + 2)).toEqual([
      { level: 32, index: 0 },
      { level: 1, index: 2 ** 31 },
    ]);
  });

  it.each([2 ** 32 + 2, 2 ** 33 + 5, 2 ** 40 + 2 ** 32 + 3, 2 ** 53 - 1])('rangeNodes(0, %d) matches a BigInt reference', (n) => {
    const expected: Array<{ level: number; index: number }> = [];
    let lo = 0n;
    const hi = BigInt(n);
    while (lo < hi) {
      const rest = hi - lo;
      const size = (rest & (rest - 1n)) === 0n ? rest : split(rest);
      expected.push({ level: size.toString(2).length - 1, index: Number(lo / size) });
      lo += size;
    }
    const got = rangeNodes(0, n);
    expect(got).toEqual(expected);
    expect(got.every((x) => Number.isInteger(x.level))).toBe(true);
  });

  it.each([
    [2 ** 32 + 1, 2 ** 32 + 2],
    [2 ** 32, 2 ** 32 + 3],
    [2 ** 33 + 7, 2 ** 34 + 9],
    [5, 2 ** 40 + 1],
  ])('an inclusion proof for leaf %d of %d verifies against the RFC 9162 root', (m, n) => {
    const proof = proveInclusion(m, n);
    const given = new Map(proof.map((r) => [`${r.lo}:${r.hi}`, h(`${r.lo}:${r.hi}`)]));
    const leaf = leafHash(Buffer.from('the leaf'));
    // MTH by its recursive definition, with the proof's subtrees standing for their leaves.
    const mth = (lo: number, hi: number): Hash => {
      const known = given.get(`${lo}:${hi}`);
      if (known) return known;
      if (hi - lo === 1) {
        expect(lo).toBe(m);
        return leaf;
      }
      const k = Number(split(BigInt(hi - lo)));
      return nodeHash(mth(lo, lo + k), mth(lo + k, hi));
    };
    const root = mth(0, n);
    expect(() =>
      verifyInclusion(
        m,
        n,
        leaf,
        proof.map((r) => given.get(`${r.lo}:${r.hi}`)!),
        root,
      ),
    ).not.toThrow();
    expect(() =>
      verifyInclusion(
        m + 1 < n ? m + 1 : m - 1,
        n,
        leaf,
        proof.map((r) => given.get(`${r.lo}:${r.hi}`)!),
        root,
      ),
    ).toThrow();
  });
});

describe('checkpoint parser as strict as tlog.ParseTree', () => {
  const root = Buffer.alloc(32, 7).toString('base64');
  it('accepts a well-formed checkpoint, with extension lines', () => {
    expect(parseCheckpointText(`example.com/log\n123\n${root}\n`).size).toBe(123);
    expect(parseCheckpointText(`example.com/log\n0\n${root}\nextra line\n`).size).toBe(0);
    expect(parseCheckpointText(`example.com/log\n9007199254740991\n${root}\n`).size).toBe(2 ** 53 - 1);
  });
  it.each([
    ['a leading zero', `o\n0123\n${root}\n`],
    ['a sign', `o\n+123\n${root}\n`],
    ['a size past 2^53 - 1', `o\n9007199254740992\n${root}\n`],
    ['a size of 2^64', `o\n18446744073709551616\n${root}\n`],
    ['no final newline', `o\n1\n${root}`],
    ['an empty origin', `\n1\n${root}\n`],
    ['a missing root', `o\n1\n`],
    ['unpadded base64', `o\n1\n${root.replace('=', '')}\n`],
    ['base64 with junk', `o\n1\n${root.slice(0, 10)}!${root.slice(11)}\n`],
    ['a 33-byte root', `o\n1\n${Buffer.alloc(33).toString('base64')}\n`],
    ['an empty extension line', `o\n1\n${root}\n\nx\n`],
    ['a size with spaces', `o\n 1\n${root}\n`],
  ])('refuses %s', (_name, text) => {
    expect(() => parseCheckpointText(text)).toThrow();
  });
});

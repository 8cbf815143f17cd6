/**
 * The browser's transparency-log code (src/scripts/tlog.ts, WebCrypto only)
 * against the server's (src/crypto/merkle.ts and note.ts, node:crypto): every
 * inclusion and consistency proof of trees up to 40 leaves verifies in both,
 * a changed hash or size is refused, and a note signed by the server opens
 * with the browser's verifier only when untouched.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { foldRange, leafHash, proveConsistency, proveInclusion, rangeNodes, rootOf } from '../src/crypto/merkle.ts';
import { checkpointText, signNote, verifierKey } from '../src/crypto/note.ts';
import * as browser from '../src/scripts/tlog.ts';

const leaves = Array.from({ length: 40 }, (_, i) => leafHash(new TextEncoder().encode(`leaf ${i}`)));
const mth = (lo: number, hi: number) => foldRange(rangeNodes(lo, hi).map((n) => rootOf(leaves.slice(n.index * 2 ** n.level, (n.index + 1) * 2 ** n.level))));

describe('browser RFC 9162 checks agree with the server', () => {
  it('leaf hashes match', async () => {
    expect(Buffer.from(await browser.leafHash(new TextEncoder().encode('leaf 7')))).toEqual(Buffer.from(leaves[7]!));
  });

  it('verifies every inclusion proof and refuses a wrong index or hash', async () => {
    for (let n = 1; n <= 40; n += 3) {
      const root = rootOf(leaves.slice(0, n));
      for (let m = 0; m < n; m++) {
        const proof = proveInclusion(m, n).map((r) => mth(r.lo, r.hi));
        await browser.verifyInclusion(m, n, leaves[m]!, proof, root);
        if (n > 1) await expect(browser.verifyInclusion((m + 1) % n, n, leaves[m]!, proof, root)).rejects.toThrow(browser.CheckFailed);
      }
    }
  });

  it('verifies every consistency proof and refuses a forged root', async () => {
    for (let n = 1; n <= 40; n += 2) {
      for (let m = 1; m <= n; m++) {
        const proof = m === n ? [] : proveConsistency(m, n).map((r) => mth(r.lo, r.hi));
        const [r1, r2] = [rootOf(leaves.slice(0, m)), rootOf(leaves.slice(0, n))];
        await browser.verifyConsistency(m, n, proof, r1, r2);
        const forged = new Uint8Array(r1);
        forged[0]! ^= 1;
        await expect(browser.verifyConsistency(m, n, proof, forged, r2)).rejects.toThrow(browser.CheckFailed);
      }
    }
  });

  it('opens a note the server signed, and refuses it changed', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = new Uint8Array(publicKey.export({ format: 'der', type: 'spki' }).subarray(12));
    const origin = 'example.com/receipts';
    const note = signNote(checkpointText({ origin, size: 40, root: rootOf(leaves) }), origin, privateKey, raw);
    const vkey = verifierKey(origin, raw);
    expect(await browser.verifierKeyOf(origin, raw)).toBe(vkey);
    const body = await browser.openNote(note, vkey);
    expect(browser.parseCheckpoint(body)).toMatchObject({ origin, size: 40 });
    await expect(browser.openNote(note.replace('\n40\n', '\n41\n'), vkey)).rejects.toThrow('does not verify');
    expect(() => browser.parseCheckpoint(`${origin}\n040\n${Buffer.from(rootOf(leaves)).toString('base64')}\n`)).toThrow('malformed checkpoint');
  });
});

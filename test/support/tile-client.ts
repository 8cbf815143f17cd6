/**
 * A C2SP tile client written from the C2SP tlog-tiles, tlog-checkpoint and
 * signed-note texts, not from the server's code: it imports nothing from src/
 * and reads a log with only its tiles prefix and verifier key, as a stranger's
 * client (Go's sumdb/tlog TileHashReader, say) would.
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { expect } from 'vitest';

const sha256 = (...parts: Uint8Array[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const hashLeaf = (entry: Uint8Array) => sha256(Buffer.from([0]), entry);
const hashNode = (l: Uint8Array, r: Uint8Array) => sha256(Buffer.from([1]), l, r);

/** RFC 6962 MTH over leaf hashes. */
function mth(hashes: Buffer[]): Buffer {
  if (hashes.length === 0) return sha256();
  if (hashes.length === 1) return hashes[0]!;
  let k = 1;
  while (k * 2 < hashes.length) k *= 2;
  return hashNode(mth(hashes.slice(0, k)), mth(hashes.slice(k)));
}

/** The RFC 6962 root (base64) of a log made of `entries`: what a checkpoint of their size must state. */
export const treeRoot = (entries: readonly Buffer[]): string => mth(entries.map(hashLeaf)).toString('base64');

/** tlog-tiles: N as 3-digit groups, all but the last prefixed with x. */
export function indexPath(n: number): string {
  const groups: string[] = [];
  do {
    groups.unshift(String(n % 1000).padStart(3, '0'));
    n = Math.floor(n / 1000);
  } while (n > 0);
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

/** Checks a signed note against a vkey `<name>+<hex id>+<base64(0x01 || Ed25519 key)>`; returns the note's body lines. */
export function openSignedNote(note: string, vkey: string): string[] {
  // The key's base64 may itself hold '+': split at the first two only.
  const [name, id] = vkey.split('+') as [string, string];
  const key64 = vkey.slice(name.length + id.length + 2);
  const key = Buffer.from(key64, 'base64');
  expect(key[0]).toBe(0x01);
  expect(
    sha256(Buffer.from(`${name}\n`), key)
      .subarray(0, 4)
      .toString('hex'),
  ).toBe(id);
  const split = note.indexOf('\n\n');
  const body = note.slice(0, split + 1);
  const sigs = note
    .slice(split + 2)
    .split('\n')
    .filter(Boolean);
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), key.subarray(1)]);
  const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  const mine = sigs.map((l) => /^— (\S+) (\S+)$/.exec(l)).find((m) => m && m[1] === name);
  expect(mine, `a signature by ${name}`).toBeTruthy();
  const sig = Buffer.from(mine![2]!, 'base64');
  expect(sig.subarray(0, 4).toString('hex')).toBe(id);
  expect(verify(null, Buffer.from(body), publicKey, sig.subarray(4))).toBe(true);
  return body.split('\n').slice(0, -1);
}

/**
 * Reads a whole log through its tiles: the checkpoint (signature checked), every
 * entry bundle and level-0 tile (each entry's hash must be its tile's hash), every
 * higher tile (each hash must be the MTH of the 256 below it), and the root.
 * Returns the entries.
 */
export async function readTiledLog(
  get: (path: string) => Promise<Uint8Array>,
  vkey: string,
  origin: string,
): Promise<{ size: number; entries: Buffer[] }> {
  const [o, sizeLine, root64] = openSignedNote(Buffer.from(await get('checkpoint')).toString('utf8'), vkey);
  expect(o).toBe(origin);
  const size = Number(sizeLine);
  const entries: Buffer[] = [];
  let below: Buffer[] = [];
  for (let level = 0; level === 0 || below.length >= 256; level++) {
    const nodes = Math.floor(size / 256 ** level);
    const here: Buffer[] = [];
    for (let n = 0; n * 256 < nodes; n++) {
      const width = Math.min(256, nodes - n * 256);
      const suffix = width === 256 ? '' : `.p/${width}`;
      const tile = Buffer.from(await get(`tile/${level}/${indexPath(n)}${suffix}`));
      expect(tile.length).toBe(32 * width);
      const hashes = Array.from({ length: width }, (_, k) => tile.subarray(32 * k, 32 * k + 32));
      if (level === 0) {
        const bundle = Buffer.from(await get(`tile/entries/${indexPath(n)}${suffix}`));
        const inBundle: Buffer[] = [];
        for (let at = 0; at < bundle.length;) {
          const len = bundle.readUInt16BE(at);
          inBundle.push(bundle.subarray(at + 2, at + 2 + len));
          at += 2 + len;
        }
        expect(inBundle.length).toBe(width);
        inBundle.forEach((e, k) => expect(hashLeaf(e).equals(hashes[k]!)).toBe(true));
        entries.push(...inBundle);
      } else {
        hashes.forEach((h, k) => expect(mth(below.slice((n * 256 + k) * 256, (n * 256 + k + 1) * 256)).equals(h)).toBe(true));
      }
      here.push(...hashes);
    }
    below = here;
  }
  expect(entries.length).toBe(size);
  expect(mth(entries.map(hashLeaf)).toString('base64')).toBe(root64);
  return { size, entries };
}

/**
 * Transparency-log checks that run in the visitor's browser with WebCrypto
 * only, so a page can prove what the server says instead of repeating it:
 *  - RFC 9162 §2.1 hashing, inclusion (§2.1.3.2) and consistency (§2.1.4.2)
 *    verification;
 *  - C2SP signed notes (c2sp.org/signed-note) with Ed25519 verifier keys and
 *    C2SP tlog checkpoints as their body.
 * A second implementation of src/crypto/merkle.ts and src/crypto/note.ts
 * (those use node:crypto); index arithmetic uses division, not 32-bit bit
 * operations, so it stays exact to 2^53.
 */

export type Bytes = Uint8Array<ArrayBuffer>;

export class CheckFailed extends Error {
  override name = 'CheckFailed';
}

export const utf8 = (s: string): Bytes => new TextEncoder().encode(s) as Bytes;

/**
 * The bytes of base64 (or base64url) text, refusing any but the canonical
 * encoding of those bytes: stray bits in the last character would let two
 * texts stand for one value. JWS parts use the stricter decodeBase64url.
 */
export function fromBase64(s: string): Bytes {
  const std = s.replace(/-/g, '+').replace(/_/g, '/').replace(/\s+/g, '');
  let bin: string;
  try {
    bin = atob(std);
  } catch {
    throw new CheckFailed('a value is not base64');
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  if (toBase64(out).replace(/=+$/, '') !== std.replace(/=+$/, '')) throw new CheckFailed('a value is not canonical base64 (its last character has bits set that encode nothing)');
  return out;
}

export function toBase64(b: Uint8Array): string {
  let s = '';
  for (const x of b) s += String.fromCharCode(x);
  return btoa(s);
}

export const toHex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function concat(...parts: Uint8Array[]): Bytes {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export async function sha256(data: Uint8Array): Promise<Bytes> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', concat(data)));
}

/** SHA-256(0x00 || data). */
export const leafHash = (data: Uint8Array) => sha256(concat(new Uint8Array([0]), data));
/** SHA-256(0x01 || left || right). */
export const nodeHash = (l: Uint8Array, r: Uint8Array) => sha256(concat(new Uint8Array([1]), l, r));

const isOdd = (n: number) => n % 2 === 1;
const half = (n: number) => Math.floor(n / 2);

/** RFC 9162 §2.1.3.2. Throws CheckFailed unless `leaf` is at `index` of the tree of `size` with `root`. */
export async function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: Uint8Array[], root: Uint8Array): Promise<void> {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) {
    throw new CheckFailed(`index ${index} is beyond tree size ${size}`);
  }
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of proof) {
    if (sn === 0) throw new CheckFailed('the proof is longer than the path');
    if (isOdd(fn) || fn === sn) {
      r = await nodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = await nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new CheckFailed('the proof is shorter than the path');
  if (!equalBytes(r, root)) throw new CheckFailed('the computed root does not match the checkpoint');
}

/** RFC 9162 §2.1.4.2. Throws CheckFailed unless tree (size1, root1) is a prefix of tree (size2, root2). */
export async function verifyConsistency(size1: number, size2: number, proof: Uint8Array[], root1: Uint8Array, root2: Uint8Array): Promise<void> {
  if (!Number.isSafeInteger(size1) || !Number.isSafeInteger(size2) || size1 < 1 || size2 < size1) {
    throw new CheckFailed(`no consistency between sizes ${size1} and ${size2}`);
  }
  if (size1 === size2) {
    if (proof.length !== 0) throw new CheckFailed('the proof must be empty for equal sizes');
    if (!equalBytes(root1, root2)) throw new CheckFailed('the roots differ for equal sizes');
    return;
  }
  if (proof.length === 0) throw new CheckFailed('empty proof');
  // When size1 is a power of two the proof omits the old root: it starts the path.
  const path = Number.isInteger(Math.log2(size1)) ? [root1, ...proof] : proof;
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (isOdd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) throw new CheckFailed('the proof is longer than the path');
    if (isOdd(fn) || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      sr = await nodeHash(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new CheckFailed('the proof is shorter than the path');
  if (!equalBytes(fr, root1)) throw new CheckFailed('the proof does not lead to the older root');
  if (!equalBytes(sr, root2)) throw new CheckFailed('the proof does not lead to the newer root');
}

export interface Verifier {
  name: string;
  keyHash: Bytes;
  raw: Bytes;
}

async function noteKeyHash(name: string, raw: Uint8Array): Promise<Bytes> {
  return (await sha256(concat(utf8(name + '\n'), new Uint8Array([1]), raw))).slice(0, 4);
}

/** A C2SP verifier key `name+hexhash+base64(0x01 || key)`, its hash checked. */
export async function parseVerifierKey(vkey: string): Promise<Verifier> {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new CheckFailed('malformed verifier key');
  const name = vkey.slice(0, first);
  const hex = vkey.slice(first + 1, second);
  const key = fromBase64(vkey.slice(second + 1));
  if (!/^[0-9a-f]{8}$/.test(hex) || key.length !== 33 || key[0] !== 1) throw new CheckFailed('malformed verifier key');
  const raw = key.slice(1);
  const keyHash = await noteKeyHash(name, raw);
  if (toHex(keyHash) !== hex) throw new CheckFailed('the verifier key hash does not match its key');
  return { name, keyHash, raw };
}

/** The verifier key string of a raw Ed25519 public key under a note name (what the server publishes). */
export async function verifierKeyOf(name: string, raw: Uint8Array): Promise<string> {
  return `${name}+${toHex(await noteKeyHash(name, raw))}+${toBase64(concat(new Uint8Array([1]), raw))}`;
}

export async function ed25519Verify(raw: Uint8Array, signature: Uint8Array, data: Uint8Array): Promise<boolean> {
  const key = await crypto.subtle.importKey('raw', concat(raw), { name: 'Ed25519' }, false, ['verify']);
  return crypto.subtle.verify({ name: 'Ed25519' }, key, concat(signature), concat(data));
}

/** Checks a signed note against a verifier key and returns its text. Throws CheckFailed otherwise. */
export async function openNote(note: string, vkey: string): Promise<string> {
  const v = await parseVerifierKey(vkey);
  const normalized = note.replace(/\r\n/g, '\n');
  const split = normalized.lastIndexOf('\n\n');
  if (split < 0 || !normalized.endsWith('\n')) throw new CheckFailed('malformed note: no signature block');
  const text = normalized.slice(0, split + 1);
  for (const line of normalized.slice(split + 2, -1).split('\n')) {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (!m) throw new CheckFailed('malformed signature line');
    if (m[1] !== v.name) continue;
    const blob = fromBase64(m[2]!);
    if (blob.length !== 68 || !equalBytes(blob.slice(0, 4), v.keyHash)) continue;
    if (await ed25519Verify(v.raw, blob.slice(4), utf8(text))) return text;
    throw new CheckFailed('the note signature does not verify');
  }
  throw new CheckFailed(`the note carries no signature by ${v.name}`);
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Bytes;
}

/** A C2SP tlog checkpoint body: origin, decimal size (no leading zeros), base64 root. */
export function parseCheckpoint(text: string): Checkpoint {
  const [origin, size, root] = text.split('\n');
  if (!origin || !size || !/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size)) || root === undefined) {
    throw new CheckFailed('malformed checkpoint');
  }
  const hash = fromBase64(root);
  if (hash.length !== 32) throw new CheckFailed('malformed checkpoint root');
  return { origin, size: Number(size), root: hash };
}

/** The origin line of a note, read before its signature is checked (to pick the verifier key). */
export const noteOrigin = (note: string): string => note.split('\n', 1)[0] ?? '';

/**
 * Standard base64 (RFC 4648 §4, padded), as the logs' JSON answers, signed
 * notes and checkpoints carry hashes and keys. Encoding reads the bytes where
 * they are (a proof answer encodes a dozen hashes); decoding accepts only the
 * one canonical encoding of the bytes, so that two texts never stand for one
 * value (RFC 4648 §3.5: no set bits in the unused low bits of the last
 * character, the padding exactly as the length needs it).
 */
import { ProofError } from './proof-error.ts';

const BASE64_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Two characters per 12 bits, per alphabet: half the lookups of a character table. */
const pairTables = new Map<string, string[]>();

function pairsOf(alphabet: string): string[] {
  let pairs = pairTables.get(alphabet);
  if (!pairs) {
    pairs = Array.from({ length: 4096 }, (_, i) => alphabet[i >> 6]! + alphabet[i & 63]!);
    pairTables.set(alphabet, pairs);
  }
  return pairs;
}

/** `bytes` in a base64 alphabet (the standard or the URL-safe one), padded with `=` or not. */
export function encodeBase64(bytes: Uint8Array, alphabet: string, pad: boolean): string {
  const pairs = pairsOf(alphabet);
  let s = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const a = bytes[i]!;
    const b = bytes[i + 1]!;
    s += pairs[(a << 4) | (b >> 4)]! + pairs[((b & 15) << 8) | bytes[i + 2]!]!;
  }
  if (bytes.length - i === 1) s += pairs[bytes[i]! << 4]! + (pad ? '==' : '');
  else if (bytes.length - i === 2)
    s += pairs[(bytes[i]! << 4) | (bytes[i + 1]! >> 4)]! + alphabet[(bytes[i + 1]! & 15) << 2]! + (pad ? '=' : '');
  return s;
}

export const base64 = (bytes: Uint8Array): string => encodeBase64(bytes, BASE64_ALPHABET, true);

/**
 * Why `data` (base64 characters only, no padding) is not the canonical
 * encoding of any bytes, or undefined when it is.
 */
export function unpaddedProblem(data: string, alphabet: string): string | undefined {
  const rest = data.length % 4;
  if (rest === 1) return 'its length is not that of any encoding';
  if (rest === 0) return undefined;
  // 2 characters carry 1 byte (4 unused bits), 3 carry 2 bytes (2 unused bits).
  const unused = rest === 2 ? 0b1111 : 0b11;
  if ((alphabet.indexOf(data[data.length - 1]!) & unused) !== 0)
    return 'its last character has bits set that encode nothing (not the canonical encoding)';
  return undefined;
}

/** The bytes of characters already checked canonical (standard alphabet, no padding). */
export function decodeChecked(data: string): Uint8Array<ArrayBuffer> {
  const bin = atob(data);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Why `s` is not canonical padded standard base64, or undefined when it is. */
function base64Problem(s: string): string | undefined {
  const m = /^([A-Za-z0-9+/]*)(={0,2})$/.exec(s);
  if (!m) return 'it has characters outside the base64 alphabet';
  const [, data, padding] = m as unknown as [string, string, string];
  if ((data.length + padding.length) % 4 !== 0) return 'its padding is not that of its length';
  return unpaddedProblem(data, BASE64_ALPHABET);
}

/** The bytes of canonical padded standard base64 `s`; throws a ProofError naming the fault otherwise. */
export function fromBase64(s: string): Uint8Array<ArrayBuffer> {
  const why = base64Problem(s);
  if (why) throw new ProofError(`a value is not canonical base64: ${why}`);
  return decodeChecked(s.replace(/=+$/, ''));
}

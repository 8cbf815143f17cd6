/**
 * Strict base64url (RFC 4648 §5) for everything that checks a signature, on
 * the server and in the browser alike (no Node APIs). An encoding is accepted
 * only in its one canonical form: the alphabet A-Z a-z 0-9 - _, no padding,
 * no length of 1 mod 4, and no set bits in the unused low bits of the last
 * character (RFC 4648 §3.5). Lenient decoders map several strings to the same
 * bytes, so a token whose last character was changed would still "verify".
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Why `s` is not canonical base64url, or undefined when it is. */
export function base64urlProblem(s: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return 'it has characters outside the base64url alphabet (or padding)';
  const rest = s.length % 4;
  if (rest === 1) return 'its length is not that of any encoding';
  if (rest === 0) return undefined;
  // 2 characters carry 1 byte (4 unused bits), 3 carry 2 bytes (2 unused bits).
  const unused = rest === 2 ? 0b1111 : 0b11;
  if ((ALPHABET.indexOf(s[s.length - 1]!) & unused) !== 0) return 'its last character has bits set that encode nothing (not the canonical encoding)';
  return undefined;
}

export const isCanonicalBase64url = (s: string): boolean => base64urlProblem(s) === undefined;

/** The bytes of canonical base64url `s`; throws an Error naming the fault otherwise. */
export function decodeBase64url(s: string): Uint8Array<ArrayBuffer> {
  const why = base64urlProblem(s);
  if (why) throw new Error(`not canonical base64url: ${why}`);
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Whether every part of a compact JWS is canonical base64url (three parts, none malformed). */
export function isCanonicalCompactJws(token: string): boolean {
  const parts = token.split('.');
  return parts.length === 3 && parts.every(isCanonicalBase64url);
}

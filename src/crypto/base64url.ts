/**
 * Strict base64url (RFC 4648 §5) for everything that checks a signature, on
 * the server and in the browser alike. An encoding is accepted only in its one
 * canonical form: the alphabet A-Z a-z 0-9 - _, no padding, no length of
 * 1 mod 4, and no set bits in the unused low bits of the last character
 * (RFC 4648 §3.5). Lenient decoders map several strings to the same bytes, so
 * a token whose last character was changed would still "verify".
 */
import { decodeChecked, encodeBase64, unpaddedProblem } from './base64.ts';
import { ProofError } from './proof-error.ts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Why `s` is not canonical base64url, or undefined when it is. */
export function base64urlProblem(s: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return 'it has characters outside the base64url alphabet (or padding)';
  return unpaddedProblem(s, ALPHABET);
}

export const isCanonicalBase64url = (s: string): boolean => base64urlProblem(s) === undefined;

/** The bytes of canonical base64url `s`; throws a ProofError naming the fault otherwise. */
export function decodeBase64url(s: string): Uint8Array<ArrayBuffer> {
  const why = base64urlProblem(s);
  if (why) throw new ProofError(`not canonical base64url: ${why}`);
  return decodeChecked(s.replace(/-/g, '+').replace(/_/g, '/'));
}

/** `bytes` as base64url, unpadded. */
export const base64url = (bytes: Uint8Array): string => encodeBase64(bytes, ALPHABET, false);

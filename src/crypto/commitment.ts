/**
 * Salted hash commitments to caller free text in public log entries
 * (docs/public-log.md). A commitment hides its value and binds to it:
 *
 *   commitment = "c1:sha256:" || base64url(SHA-256(salt || UTF-8(canonical JSON of value)))
 *
 * with a fresh random 32-byte salt per field. Whoever holds the opening (the
 * value and its salt) can show a third party that an entry committed to that
 * value; without it the entry reveals nothing of the value (the salt defeats
 * guessing a short value and comparing hashes).
 */
import { base64url, decodeBase64url, isCanonicalBase64url } from './base64url.ts';
import { concatBytes, utf8 } from './bytes.ts';
import { canonicalJson } from './canonical.ts';
import { randomBytes, sha256 } from './platform.ts';

export const COMMITMENT_PREFIX = 'c1:sha256:';

/** What opens a commitment: the committed value and its salt (base64url). */
export interface Opening {
  value: unknown;
  salt: string;
  commitment: string;
}

function digest(salt: Uint8Array, value: unknown): string {
  return COMMITMENT_PREFIX + base64url(sha256(concatBytes(salt, utf8(canonicalJson(value)))));
}

/** Commits to `value` under a fresh random salt (or the given one). */
export function commit(value: unknown, salt: Uint8Array = randomBytes(32)): Opening {
  return { value, salt: base64url(salt), commitment: digest(salt, value) };
}

/** The commitment an opening made here opens (its salt canonical base64url, as `commit` writes it). */
export const commitmentOf = (o: Pick<Opening, 'value' | 'salt'>): string => digest(decodeBase64url(o.salt), o.value);

/** True when `o` opens `commitment`: the value and salt hash to it. */
export function verifyOpening(commitment: string, o: Pick<Opening, 'value' | 'salt'>): boolean {
  if (!commitment.startsWith(COMMITMENT_PREFIX) || typeof o.salt !== 'string' || o.salt.length !== 43 || !isCanonicalBase64url(o.salt))
    return false;
  return digest(decodeBase64url(o.salt), o.value) === commitment;
}

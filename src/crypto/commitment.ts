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
import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from './canonical.ts';

export const COMMITMENT_PREFIX = 'c1:sha256:';

/** What opens a commitment: the committed value and its salt (base64url). */
export interface Opening {
  value: unknown;
  salt: string;
  commitment: string;
}

function digest(salt: Uint8Array, value: unknown): string {
  return COMMITMENT_PREFIX + createHash('sha256').update(salt).update(canonicalJson(value), 'utf8').digest('base64url');
}

/** Commits to `value` under a fresh random salt (or the given one). */
export function commit(value: unknown, salt: Uint8Array = randomBytes(32)): Opening {
  return { value, salt: Buffer.from(salt).toString('base64url'), commitment: digest(salt, value) };
}

/** True when `o` opens `commitment`: the value and salt hash to it. */
export function verifyOpening(commitment: string, o: Pick<Opening, 'value' | 'salt'>): boolean {
  if (!commitment.startsWith(COMMITMENT_PREFIX) || !/^[A-Za-z0-9_-]{43}$/.test(o.salt)) return false;
  return digest(Buffer.from(o.salt, 'base64url'), o.value) === commitment;
}

/** True for a string that is a commitment of this scheme. */
export const isCommitment = (v: unknown): v is string => typeof v === 'string' && v.startsWith(COMMITMENT_PREFIX);

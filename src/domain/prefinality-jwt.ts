/**
 * Pre-finality receipts as JWTs (RFC 7519), signed with the service's Ed25519
 * key, and their verification per RFC 8725 (JWT best current practices):
 *  - the algorithm is pinned: only `EdDSA` and its RFC 9864 name `Ed25519`
 *    (so `none` and `HS256` signed with the public key are refused up front);
 *  - the `typ` is pinned to PREFINALITY_TYP (no confusion with other tokens);
 *  - `kid` is looked up only in our own key set, never taken from the token
 *    (no `jwk`, `jku`, `x5u` header is ever followed);
 *  - `iss`, `exp` and every claim the RTP gate relies on are required.
 */
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { isCanonicalBase64url } from '../crypto/base64url.ts';
import { fingerprint } from '../crypto/canonical.ts';
import { verifyOpening } from '../crypto/commitment.ts';
import { signCompactJws } from '../crypto/jws.ts';
import type { Keyring, SigningKey } from '../crypto/keys.ts';
import { PREFINALITY_TYP } from '../crypto/receipt.ts';
import { DECISIONS, RAILS, type Decision, type Rail, type Transfer } from './prefinality.ts';
/** Algorithms a receipt may name: EdDSA (RFC 8037) and Ed25519 (RFC 9864). We sign with EdDSA. */
export const ACCEPTED_ALGS = ['EdDSA', 'Ed25519'] as const;
export const SIGN_ALG = 'EdDSA';

export const REQUIRED_CLAIMS = ['iss', 'sub', 'iat', 'exp', 'jti', 'decision', 'rail', 'transfer_hash', 'transfer', 'rule'] as const;

export interface PrefinalityClaims {
  iss: string;
  /** Who the clearance was given to: the API key id, or "demo". */
  sub: string;
  iat: number;
  exp: number;
  jti: string;
  decision: Decision;
  rail: Rail;
  /** SHA-256 hex of the canonical JSON of `transfer`. */
  transfer_hash: string;
  transfer: Transfer;
  /**
   * The salted commitment to `transfer` that the receipt in the public log holds (`data.transfer`), and
   * its salt: whoever holds this JWT can show that log entry is about this transfer. Absent from
   * receipts issued before commitments.
   */
  transfer_commitment?: string;
  transfer_salt?: string;
  /** The id of the rule that decided. */
  rule: string;
  /** The receipt in the receipts log that records this decision. */
  receipt_id: string;
  demo?: boolean;
  /** A GO that a person's approval cleared (docs/reviews.md): the review, its approval receipt and who approved. */
  review?: { id: string; hold_receipt_id: string; approval_receipt_id: string; approved_by: { kind: 'key' | 'person'; id: string } };
}

/** The GO JWT: a compact JWS of the claims' JSON, as jose's SignJWT makes it (verified with jose, below). */
export function signPrefinalityJwt(key: SigningKey, claims: PrefinalityClaims): string {
  return signCompactJws(JSON.stringify(claims), key, { alg: SIGN_ALG, typ: PREFINALITY_TYP, kid: key.kid });
}

export type VerifyFailure =
  'malformed' | 'alg_not_allowed' | 'typ_mismatch' | 'unknown_kid' | 'bad_signature' | 'expired' | 'claim_invalid';

export type VerifyResult =
  { valid: true; header: Record<string, unknown>; claims: PrefinalityClaims } | { valid: false; reason: VerifyFailure; detail: string };

const fail = (reason: VerifyFailure, detail: string): VerifyResult => ({ valid: false, reason, detail });

function decodeHeader(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  // Canonical base64url only: jose would accept a signature changed in its last character's unused bits.
  if (parts.length !== 3 || !parts.every(isCanonicalBase64url) || !parts[0]) return undefined;
  try {
    const h: unknown = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    return h !== null && typeof h === 'object' && !Array.isArray(h) ? (h as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export interface VerifyOptions {
  issuer: string;
  now?: Date;
}

/** Verifies a pre-finality receipt JWT against our key set. Never throws for a bad token. */
export async function verifyPrefinalityJwt(token: string, keyring: Keyring, opts: VerifyOptions): Promise<VerifyResult> {
  const header = decodeHeader(token);
  if (!header) return fail('malformed', 'not a compact JWS: three base64url parts with a JSON header');
  const alg = header.alg;
  if (typeof alg !== 'string' || !(ACCEPTED_ALGS as readonly string[]).includes(alg)) {
    return fail('alg_not_allowed', `alg ${JSON.stringify(alg)} is not accepted; only ${ACCEPTED_ALGS.join(' or ')}`);
  }
  if (typeof header.typ !== 'string' || header.typ.toLowerCase() !== PREFINALITY_TYP) {
    return fail('typ_mismatch', `typ must be ${PREFINALITY_TYP}`);
  }
  const kid = header.kid;
  const key = typeof kid === 'string' ? keyring.byKid(kid) : undefined;
  if (!key) return fail('unknown_kid', `kid ${JSON.stringify(kid)} is not in our key set`);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, key.publicKey, {
      algorithms: [...ACCEPTED_ALGS],
      typ: PREFINALITY_TYP,
      issuer: opts.issuer,
      requiredClaims: [...REQUIRED_CLAIMS],
      ...(opts.now ? { currentDate: opts.now } : {}),
    }));
  } catch (e) {
    if (e instanceof errors.JWTExpired) return fail('expired', 'the receipt has expired');
    if (e instanceof errors.JWSSignatureVerificationFailed)
      return fail('bad_signature', 'the signature does not verify (altered or foreign)');
    if (e instanceof errors.JWTClaimValidationFailed) return fail('claim_invalid', `claim ${e.claim}: ${e.message}`);
    if (e instanceof errors.JWTInvalid || e instanceof errors.JWSInvalid) return fail('malformed', (e as Error).message);
    return fail('malformed', (e as Error).message);
  }
  const claims = payload as unknown as PrefinalityClaims;
  if (!(DECISIONS as readonly string[]).includes(claims.decision)) return fail('claim_invalid', 'claim decision: unknown decision');
  if (!(RAILS as readonly string[]).includes(claims.rail)) return fail('claim_invalid', 'claim rail: unknown rail');
  if (typeof claims.transfer !== 'object' || claims.transfer === null || fingerprint(claims.transfer) !== claims.transfer_hash) {
    return fail('claim_invalid', 'claim transfer_hash: does not match the transfer');
  }
  if (claims.transfer_commitment !== undefined || claims.transfer_salt !== undefined) {
    const opening = { value: claims.transfer, salt: String(claims.transfer_salt) };
    if (typeof claims.transfer_commitment !== 'string' || !verifyOpening(claims.transfer_commitment, opening)) {
      return fail('claim_invalid', 'claim transfer_commitment: the salt does not open it to the transfer');
    }
  }
  return { valid: true, header, claims };
}

/**
 * Compact JWS (RFC 7515) verification with Ed25519 (RFC 8037 `EdDSA`, or its
 * RFC 9864 name `Ed25519`), the one verifier of the server, the npm package
 * and the browser. The algorithm and the `typ` are pinned by the caller; the
 * `kid` is looked up only among the keys the caller trusts, never taken from
 * the token (no `jwk`, `jku`, `x5u` is followed); every part must be canonical
 * base64url (src/crypto/base64url.ts); a header naming critical extensions is
 * refused, as this verifier knows none. Signing is src/crypto/jws.ts.
 */
import { base64urlProblem, decodeBase64url } from './base64url.ts';
import { fromUtf8, utf8 } from './bytes.ts';
import { ProofError } from './proof-error.ts';
import { verifier } from './platform.ts';

const JWS_ALGS: readonly string[] = ['EdDSA', 'Ed25519'];

/** A trusted signing key: its kid and raw 32-byte Ed25519 public key. */
export interface TrustedKey {
  kid: string;
  raw: Uint8Array;
}

/** Where a verifier looks a `kid` up: a keyring, a published key set. */
export interface KeyLookup {
  byKid(kid: string): TrustedKey | undefined | Promise<TrustedKey | undefined>;
}

/** A public key as a key set publishes it. */
export interface PublicJwk {
  kid?: string;
  kty: string;
  crv: string;
  x: string;
}

/** A KeyLookup over published JWKs: the Ed25519 ones (OKP) whose `x` is canonical base64url of 32 bytes. */
export function jwkKeyLookup(jwks: readonly PublicJwk[]): KeyLookup {
  const keys = new Map<string, TrustedKey>();
  for (const k of jwks) {
    if (typeof k.kid !== 'string' || k.kty !== 'OKP' || k.crv !== 'Ed25519' || typeof k.x !== 'string' || base64urlProblem(k.x)) continue;
    const raw = decodeBase64url(k.x);
    if (raw.length === 32 && !keys.has(k.kid)) keys.set(k.kid, { kid: k.kid, raw });
  }
  return { byKid: (kid) => keys.get(kid) };
}

export interface DecodedJws {
  header: Record<string, unknown>;
  payloadText: string;
  /** `header.payload` as sent: what the signature covers. */
  signingInput: string;
  /** The signature as sent (base64url), decoded strictly by the check. */
  signatureText: string;
}

/** Whether text has the shape of a compact JWS (three non-empty base64url parts), before any check. */
export const looksLikeJws = (s: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(s);

function part(s: string, what: string): Uint8Array {
  const why = base64urlProblem(s);
  if (why) throw new ProofError(`the ${what} is not canonical base64url: ${why}`);
  return decodeBase64url(s);
}

function jsonObject(text: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    /* reported below */
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ProofError(`the ${what} is not a JSON object`);
  return v as Record<string, unknown>;
}

/** The parts of a compact JWS whose payload may be any text (a checkpoint JWS signs a checkpoint body). Throws ProofError when malformed. */
export function decodeJwsText(compact: string): DecodedJws {
  const parts = compact.split('.');
  if (parts.length !== 3) throw new ProofError('not a compact JWS (three base64url parts)');
  const [h, p, s] = parts as [string, string, string];
  const header = jsonObject(fromUtf8(part(h, 'JWS header')), 'JWS header');
  return { header, payloadText: fromUtf8(part(p, 'JWS payload')), signingInput: `${h}.${p}`, signatureText: s };
}

/** The parts of a compact JWS whose payload is a JSON object. Throws ProofError when malformed. */
export function decodeJws(compact: string): DecodedJws & { payload: Record<string, unknown> } {
  const parts = decodeJwsText(compact);
  return { ...parts, payload: jsonObject(parts.payloadText, 'JWS payload') };
}

/** Why a JWS was refused: the reason codes of the receipts verifier's answers. */
export type JwsFailure = 'malformed' | 'bad_alg' | 'bad_typ' | 'unknown_kid' | 'bad_signature';

export type JwsCheck = { valid: true; kid: string; jws: DecodedJws } | { valid: false; reason: JwsFailure; detail: string };

/** Verifies a compact JWS of type `typ` by one of `keys`. Never rejects for a bad token: says why it fails. */
export async function verifyCompactJws(compact: string, keys: KeyLookup, typ: string): Promise<JwsCheck> {
  let jws: DecodedJws;
  try {
    jws = decodeJwsText(compact);
  } catch (e) {
    return { valid: false, reason: 'malformed', detail: (e as Error).message };
  }
  const { alg, kid, crit } = jws.header;
  const signatureProblem = base64urlProblem(jws.signatureText);
  if (signatureProblem)
    return { valid: false, reason: 'bad_signature', detail: `the signature is not canonical base64url: ${signatureProblem}` };
  if (crit !== undefined)
    return { valid: false, reason: 'malformed', detail: 'the JWS names critical extensions (crit) this verifier does not know' };
  if (!JWS_ALGS.includes(String(alg)))
    return { valid: false, reason: 'bad_alg', detail: `the algorithm ${String(alg)} is not accepted (only ${JWS_ALGS.join(' or ')})` };
  if (jws.header.typ !== typ) return { valid: false, reason: 'bad_typ', detail: `the token type is ${String(jws.header.typ)}, not ${typ}` };
  const key = typeof kid === 'string' ? await keys.byKid(kid) : undefined;
  if (!key) return { valid: false, reason: 'unknown_kid', detail: `the key ${String(kid)} is not among the trusted keys` };
  if (!(await verifier.verify(key.raw, utf8(jws.signingInput), decodeBase64url(jws.signatureText)))) {
    return {
      valid: false,
      reason: 'bad_signature',
      detail: 'the signature does not verify: the token was changed or not signed by this key',
    };
  }
  return { valid: true, kid: key.kid, jws };
}

/** Verifies a compact JWS of type `typ` by one of `keys`; rejects with a ProofError naming why it fails. */
export async function checkCompactJws(compact: string, keys: KeyLookup, typ: string): Promise<{ kid: string; jws: DecodedJws }> {
  const check = await verifyCompactJws(compact, keys, typ);
  if (!check.valid) throw new ProofError(check.detail);
  return check;
}

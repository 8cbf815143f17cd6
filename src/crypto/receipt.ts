/**
 * Verification of receipt JWS (see src/ledger/receipts.ts for their making):
 * compact JWS, alg EdDSA (or its RFC 9864 name Ed25519), typ
 * "fusegate-receipt+jws", kid looked up only in our own key set.
 */
import { compactVerify, decodeProtectedHeader } from 'jose';
import type { KeyObject } from 'node:crypto';

/** Where the verifier looks a `kid` up: our keyring, or a JWKS a stranger fetched. */
export interface KeyLookup {
  byKid(kid: string): { kid: string; publicKey: KeyObject | CryptoKey } | undefined;
}

export const RECEIPT_TYP = 'fusegate-receipt+jws';
const ALGS = ['EdDSA', 'Ed25519'];

export type ReceiptCheck =
  | { valid: true; kid: string; payload: Record<string, unknown> }
  | { valid: false; reason: string; detail: string };

export async function verifyReceiptJws(keyring: KeyLookup, jws: string): Promise<ReceiptCheck> {
  let header;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    return { valid: false, reason: 'malformed', detail: 'not a compact JWS' };
  }
  if (jws.split('.').length !== 3) return { valid: false, reason: 'malformed', detail: 'not a compact JWS' };
  if (!ALGS.includes(String(header.alg))) return { valid: false, reason: 'bad_alg', detail: `alg ${String(header.alg)} is not accepted` };
  if (header.typ !== RECEIPT_TYP) return { valid: false, reason: 'bad_typ', detail: `typ must be ${RECEIPT_TYP}` };
  const key = typeof header.kid === 'string' ? keyring.byKid(header.kid) : undefined;
  if (!key) return { valid: false, reason: 'unknown_kid', detail: 'the kid names none of our keys' };
  try {
    const { payload } = await compactVerify(jws, key.publicKey, { algorithms: ALGS });
    return { valid: true, kid: key.kid, payload: JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown> };
  } catch {
    return { valid: false, reason: 'bad_signature', detail: 'the signature does not verify' };
  }
}

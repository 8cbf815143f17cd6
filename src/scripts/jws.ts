/**
 * Compact JWS (RFC 7515) verification in the browser with WebCrypto Ed25519,
 * against a key set the page fetched from the service's published documents.
 * The algorithm is pinned (EdDSA or its RFC 9864 name Ed25519); the `kid` is
 * looked up in the given keys only, never taken from the token.
 */
import { decodeBase64url } from '../crypto/base64url.ts';
import { CheckFailed, ed25519Verify, utf8 } from './tlog.ts';

/** A JWS part or JWK member: canonical base64url only (src/crypto/base64url.ts). */
function part(s: string, what: string): Uint8Array<ArrayBuffer> {
  try {
    return decodeBase64url(s);
  } catch (e) {
    throw new CheckFailed(`the ${what} is ${(e as Error).message}`);
  }
}

export interface PublicJwk {
  kid?: string;
  kty: string;
  crv: string;
  x: string;
}

export interface JwsParts {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: string;
  /** The signature as sent (base64url): decoded, strictly, by the signature check. */
  signatureText: string;
}

const ALGS = ['EdDSA', 'Ed25519'];

export function looksLikeJws(s: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(s);
}

/** The parts of a compact JWS whose payload may be any text (a checkpoint JWS signs the checkpoint body). */
export function decodeJwsText(compact: string): Omit<JwsParts, 'payload'> & { payloadText: string } {
  if (!looksLikeJws(compact)) throw new CheckFailed('not a compact JWS (three base64url parts)');
  const [h, p, s] = compact.split('.') as [string, string, string];
  const headerBytes = part(h, 'JWS header');
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder().decode(headerBytes));
  } catch {
    /* reported below */
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new CheckFailed('the JWS header is not a JSON object');
  return { header: header as Record<string, unknown>, payloadText: new TextDecoder().decode(part(p, 'JWS payload')), signingInput: `${h}.${p}`, signatureText: s };
}

export function decodeJws(compact: string): JwsParts {
  const parts = decodeJwsText(compact);
  let payload: unknown;
  try {
    payload = JSON.parse(parts.payloadText);
  } catch {
    /* reported below */
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new CheckFailed('the JWS payload is not a JSON object');
  return { header: parts.header, payload: payload as Record<string, unknown>, signingInput: parts.signingInput, signatureText: parts.signatureText };
}

/** Checks the signature with the key named by `kid` in `keys`; returns that kid. */
async function checkSignature(parts: Omit<JwsParts, 'payload'>, keys: PublicJwk[], typ: string): Promise<string> {
  const { alg, kid } = parts.header;
  if (!ALGS.includes(String(alg))) throw new CheckFailed(`the algorithm ${String(alg)} is not accepted`);
  if (parts.header.typ !== typ) throw new CheckFailed(`the token type is ${String(parts.header.typ)}, not ${typ}`);
  const key = keys.find((k) => k.kid === kid && k.kty === 'OKP' && k.crv === 'Ed25519');
  if (!key) throw new CheckFailed(`the key ${String(kid)} is not among the published keys`);
  const ok = await ed25519Verify(part(key.x, `public key ${String(kid)}`), part(parts.signatureText, 'signature'), utf8(parts.signingInput));
  if (!ok) throw new CheckFailed('the signature does not verify: the token was changed or not signed by this service');
  return String(kid);
}

/** Verifies a JWS whose payload is a JSON object; returns the decoded parts. */
export async function verifyJws(compact: string, keys: PublicJwk[], typ: string): Promise<JwsParts & { kid: string }> {
  const parts = decodeJws(compact);
  return { ...parts, kid: await checkSignature(parts, keys, typ) };
}

/** Verifies a JWS whose payload is text; returns that text and the signing kid. */
export async function verifyJwsText(compact: string, keys: PublicJwk[], typ: string): Promise<{ payloadText: string; kid: string }> {
  const parts = decodeJwsText(compact);
  return { payloadText: parts.payloadText, kid: await checkSignature(parts, keys, typ) };
}

/** JSON with keys sorted at every level, to compare two payloads by value. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

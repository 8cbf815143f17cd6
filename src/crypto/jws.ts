/** Compact JWS signing (RFC 7515) with the service's Ed25519 key. */
import { signEd25519 } from './ed25519.ts';
import type { SigningKey } from './keys.ts';

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');

/**
 * A compact JWS (EdDSA) over `payload` with `header`, byte for byte as jose's
 * CompactSign makes it (Ed25519 is deterministic). Signed synchronously
 * (signEd25519): measured under load, jose's WebCrypto path cost the event
 * loop more than this one signature (an absence witness went from 2,600 to
 * 3,700–4,300 answers/s).
 */
export function signCompactJws(payload: string, key: SigningKey, header: Record<string, unknown>): string {
  // The signing input is base64url text and dots, ASCII: encoded as latin1, the same bytes as UTF-8 with less work.
  const input = `${encodedHeader(header)}.${b64url(payload)}`;
  return `${input}.${b64url(signEd25519(Buffer.from(input, 'latin1'), key.privateKey))}`;
}

/** Encoded protected headers by their JSON text: a handful (a few kinds, keys rotate rarely), each in every JWS of its kind. */
const encodedHeaders = new Map<string, string>();
const ENCODED_HEADERS_MAX = 64;

function encodedHeader(header: Record<string, unknown>): string {
  const json = JSON.stringify(header);
  let encoded = encodedHeaders.get(json);
  if (encoded === undefined) {
    encoded = b64url(json);
    if (encodedHeaders.size < ENCODED_HEADERS_MAX) encodedHeaders.set(json, encoded);
  }
  return encoded;
}

/** A compact JWS (EdDSA) over `payload`, header `{ alg, kid, typ }`. */
export const compactJwsSync = (payload: string, key: SigningKey, typ: string): string =>
  signCompactJws(payload, key, { alg: 'EdDSA', kid: key.kid, typ });

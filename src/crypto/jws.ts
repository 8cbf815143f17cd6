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
  return signEncoded(b64url(JSON.stringify(header)), payload, key);
}

/** The signing input is base64url text and dots, ASCII: encoded as latin1, which is the same bytes and faster than UTF-8. */
function signEncoded(encodedHeader: string, payload: string, key: SigningKey): string {
  const input = `${encodedHeader}.${b64url(payload)}`;
  return `${input}.${b64url(signEd25519(Buffer.from(input, 'latin1'), key.privateKey))}`;
}

/** Encoded `{ alg, kid, typ }` headers by kid and typ: a handful (keys rotate rarely), each signed into every JWS of its kind. */
const encodedHeaders = new Map<string, string>();

/** A compact JWS (EdDSA) over `payload`, header `{ alg, kid, typ }`. */
export function compactJwsSync(payload: string, key: SigningKey, typ: string): string {
  const id = `${key.kid} ${typ}`;
  let header = encodedHeaders.get(id);
  if (header === undefined) encodedHeaders.set(id, (header = b64url(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ }))));
  return signEncoded(header, payload, key);
}

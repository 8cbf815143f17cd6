/**
 * The Node platform of the crypto core (src/crypto/platform.ts): SHA-256 and
 * Ed25519 verification by node:crypto (OpenSSL). The server, the command line
 * and the bench install it at start (`usePlatform(NODE)`); nothing else in src/crypto
 * imports a Node module but this file, the key files (keys.ts), the signer
 * (ed25519.ts) and JWS signing (jws.ts).
 */
import { createPublicKey, hash, verify, type KeyObject } from 'node:crypto';
import type { Platform, Sha256, Sha256Hex, Verifier } from './platform.ts';

/**
 * One-shot SHA-256 (crypto.hash): measured about 0.8 µs less per interior
 * node than a Hash object fed three updates, and a string is hashed as its
 * UTF-8 without a copy.
 */
const nodeSha256: Sha256 = (data) => hash('sha256', data, 'buffer');

/** Hex from the same call: measured about twice as fast as hashing to bytes and writing hex in JavaScript. */
const nodeSha256Hex: Sha256Hex = (text) => hash('sha256', text, 'hex');

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw key follows. */
const SPKI_PREFIX = new Uint8Array([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);

function publicKeyOf(raw: Uint8Array): KeyObject {
  const der = new Uint8Array(SPKI_PREFIX.length + raw.length);
  der.set(SPKI_PREFIX);
  der.set(raw, SPKI_PREFIX.length);
  return createPublicKey({ key: Buffer.from(der.buffer), format: 'der', type: 'spki' });
}

/** Ed25519 by node:crypto, synchronously on this thread (WebCrypto would queue it on the thread pool). */
const nodeVerifier: Verifier = {
  async verify(publicKey, message, signature) {
    if (publicKey.length !== 32 || signature.length !== 64) return false;
    return verify(null, message, publicKeyOf(publicKey), signature);
  },
};

export const NODE: Platform = { sha256: nodeSha256, sha256Hex: nodeSha256Hex, verifier: nodeVerifier };

/**
 * Ed25519 signatures (RFC 8032): every signature the service makes goes
 * through `signEd25519`.
 *
 * libsodium (the `sodium-native` addon) signs when it loads; node:crypto
 * (OpenSSL) otherwise. Measured on this project's machine, libsodium signs in
 * 18–25 µs and OpenSSL in 34–44 µs, and the evaluate GO, the execute gate and
 * the absence witness each sign once per answer. Ed25519 signatures are
 * deterministic, so both give the same bytes for the same key and message:
 * which one signed is invisible to a verifier. The addon is an optional
 * dependency: where it has no build, node:crypto signs.
 */
import { createPublicKey, sign, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Signer } from './platform.ts';

interface Sodium {
  crypto_sign_seed_keypair(pk: Buffer, sk: Buffer, seed: Buffer): void;
  crypto_sign_detached(sig: Buffer, message: Uint8Array, sk: Buffer): void;
}

function loadSodium(): Sodium | null {
  try {
    return createRequire(import.meta.url)('sodium-native') as Sodium;
  } catch {
    return null;
  }
}

const sodium = loadSodium();

/** Which library signs in this process: 'libsodium' or 'node:crypto'. */
export const ed25519Signer: 'libsodium' | 'node:crypto' = sodium ? 'libsodium' : 'node:crypto';

/**
 * libsodium's 64-byte secret key (seed, then public key) for each private
 * KeyObject, derived once. It lives in memory only, as the KeyObject does.
 */
const secretKeys = new WeakMap<KeyObject, Buffer>();

function sodiumSecretKey(s: Sodium, key: KeyObject): Buffer {
  let sk = secretKeys.get(key);
  if (!sk) {
    const { d } = key.export({ format: 'jwk' });
    if (typeof d !== 'string') throw new Error('an Ed25519 signature needs a private key');
    const seed = Buffer.from(d, 'base64url');
    sk = Buffer.alloc(64);
    s.crypto_sign_seed_keypair(Buffer.alloc(32), sk, seed);
    seed.fill(0);
    secretKeys.set(key, sk);
  }
  return sk;
}

/** The 64-byte Ed25519 signature of `message` by the private `key`. */
export function signEd25519(message: Uint8Array, key: KeyObject): Buffer {
  if (!sodium) return sign(null, message, key);
  const signature = Buffer.allocUnsafe(64);
  sodium.crypto_sign_detached(signature, message, sodiumSecretKey(sodium, key));
  return signature;
}

/** The Signer of a private key (src/crypto/platform.ts): what the core signs notes, cosignatures and COSE with. */
export function signerOf(privateKey: KeyObject): Signer {
  const raw = new Uint8Array(createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(12));
  return { raw, sign: (message) => signEd25519(message, privateKey) };
}

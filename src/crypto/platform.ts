/**
 * The primitives the crypto core takes from the platform it runs on:
 * SHA-256 (as bytes, and as hex for fingerprints) and Ed25519 signature
 * verification. Everything else in src/crypto
 * (the log math, signed notes, cosignatures, JWS, COSE) is written once on top
 * of them, so the server, the npm client and the browser run the same code.
 *
 * The defaults run anywhere: SHA-256 from @noble/hashes (synchronous, so the
 * tree math stays synchronous in a browser too) and verification through
 * WebCrypto (`crypto.subtle`, in browsers and in Node). A platform with faster
 * primitives installs them once, at its edge, before it works: the server, the
 * command line and the bench install node:crypto's (src/crypto/node.ts), which
 * hashes a 64-byte node about twice as fast as @noble/hashes here
 * (docs/trust-core.md, "One core"). The math reads the installed function,
 * never which platform it is on.
 */
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { toHex, utf8 } from './bytes.ts';

/** SHA-256 of bytes, or of a string's UTF-8. */
export type Sha256 = (data: Uint8Array | string) => Uint8Array;

/** SHA-256 of a string's UTF-8, in lowercase hex (a fingerprint): one call where a platform has one. */
export type Sha256Hex = (text: string) => string;

/** `n` bytes from a cryptographically secure generator, to read at once (a platform may hand out a view of a pool it reuses). */
export type RandomBytes = (n: number) => Uint8Array;

/** Checks Ed25519 signatures (RFC 8032) by raw 32-byte public keys. */
export interface Verifier {
  /** Whether `signature` is the Ed25519 signature of `message` by `publicKey`; false for a key or signature of the wrong length. */
  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
}

/** Makes Ed25519 signatures with one key: the server's keys (src/crypto/keys.ts), a test's. The browser never signs. */
export interface Signer {
  /** The raw 32-byte public key. */
  raw: Uint8Array;
  sign(message: Uint8Array): Uint8Array;
}

/** SHA-256 by @noble/hashes. */
const portableSha256: Sha256 = (data) => nobleSha256(typeof data === 'string' ? utf8(data) : data);

const portableSha256Hex: Sha256Hex = (text) => toHex(portableSha256(text));

const webCryptoRandomBytes: RandomBytes = (n) => crypto.getRandomValues(new Uint8Array(n));

/** A copy in an ArrayBuffer of its own, as WebCrypto takes its inputs. */
const own = (b: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(b);

/** Ed25519 through WebCrypto. */
const webCryptoVerifier: Verifier = {
  async verify(publicKey, message, signature) {
    if (publicKey.length !== 32 || signature.length !== 64) return false;
    const key = await crypto.subtle.importKey('raw', own(publicKey), { name: 'Ed25519' }, false, ['verify']);
    return crypto.subtle.verify({ name: 'Ed25519' }, key, own(signature), own(message));
  },
};

/** The installed SHA-256 (a live binding: it follows usePlatform). */
export let sha256: Sha256 = portableSha256;

/** The installed hex SHA-256 (a live binding: it follows usePlatform). */
export let sha256Hex: Sha256Hex = portableSha256Hex;

/** The installed Ed25519 verifier (a live binding: it follows usePlatform). */
export let verifier: Verifier = webCryptoVerifier;

/** The installed secure random bytes (a live binding: it follows usePlatform). */
export let randomBytes: RandomBytes = webCryptoRandomBytes;

export interface Platform {
  sha256: Sha256;
  sha256Hex: Sha256Hex;
  verifier: Verifier;
  randomBytes: RandomBytes;
}

/** Installs a platform's primitives; called once by an entry point (src/server.ts, src/cli.ts, bench/run.ts) before any work. */
export function usePlatform(p: Platform): void {
  sha256 = p.sha256;
  sha256Hex = p.sha256Hex;
  verifier = p.verifier;
  randomBytes = p.randomBytes;
}

/** The primitives installed now. */
export const currentPlatform = (): Platform => ({ sha256, sha256Hex, verifier, randomBytes });

/** The portable primitives every platform has. */
export const PORTABLE: Platform = {
  sha256: portableSha256,
  sha256Hex: portableSha256Hex,
  verifier: webCryptoVerifier,
  randomBytes: webCryptoRandomBytes,
};

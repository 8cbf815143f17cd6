/**
 * The service's Ed25519 signing keys.
 *
 * One key signs at a time ("current"); rotation retires it but keeps its
 * public half published under its `kid`, so every old receipt and checkpoint
 * stays verifiable. `kid` is the RFC 7638 JWK thumbprint of the public key.
 *
 * Storage: a JSON file (mode 0600) created on first start, or the private key
 * given in SIGNING_KEY_JWK. A retired key's private half is discarded (after
 * the webhook co-signing overlap, when a rotation asked for one).
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { dirname } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { ensureDir } from '../startup-error.ts';
import { signerOf } from './ed25519.ts';
import type { Signer } from './platform.ts';

export interface PublicSigningKey {
  kid: string;
  /** The public key as a JWK (kty OKP, crv Ed25519, x), with kid, alg and use. */
  jwk: JWK;
  publicKey: KeyObject;
  /** The 32 raw public key bytes. */
  raw: Uint8Array;
  created_at: string;
  retired_at?: string;
}

/** A key that signs: its private half, and `sign` (signEd25519 with it) for the core's signing functions. */
export interface SigningKey extends PublicSigningKey, Signer {
  privateKey: KeyObject;
}

export interface Keyring {
  current: SigningKey;
  /**
   * Retired keys that still co-sign webhook deliveries during a rotation's
   * overlap (WEBHOOK_KEY_OVERLAP_HOURS), so that a subscriber that knows only
   * the previous key keeps verifying. Receipts are signed by `current` alone.
   */
  cosigning: SigningKey[];
  /** Current first, then retired keys, newest first. */
  all: PublicSigningKey[];
  byKid(kid: string): PublicSigningKey | undefined;
}

interface StoredKey {
  created_at: string;
  retired_at?: string;
  /** Present for the current key, and for a retired one until `cosign_until`. */
  private_jwk?: JWK;
  public_jwk: JWK;
  /** A retired key co-signs webhooks until then; after it, its private half is discarded. */
  cosign_until?: string;
}

interface KeyFile {
  version: 1;
  keys: StoredKey[];
}

export const SIGNING_ALG = 'EdDSA';

function publicJwkOf(jwk: JWK): JWK {
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x };
}

async function toPublicKey(stored: Pick<StoredKey, 'public_jwk' | 'created_at' | 'retired_at'>): Promise<PublicSigningKey> {
  const pub = publicJwkOf(stored.public_jwk);
  if (pub.kty !== 'OKP' || pub.crv !== 'Ed25519' || typeof pub.x !== 'string') {
    throw new Error('signing keys must be Ed25519 OKP JWKs');
  }
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const raw = new Uint8Array(Buffer.from(pub.x, 'base64url'));
  return {
    kid,
    jwk: { ...pub, kid, alg: SIGNING_ALG, use: 'sig' },
    publicKey: createPublicKey({ key: pub as never, format: 'jwk' }),
    raw,
    created_at: stored.created_at,
    ...(stored.retired_at ? { retired_at: stored.retired_at } : {}),
  };
}

async function toSigningKey(stored: StoredKey): Promise<SigningKey> {
  if (!stored.private_jwk) throw new Error('the current signing key has no private half');
  const pub = await toPublicKey(stored);
  const privateKey = createPrivateKey({ key: stored.private_jwk as never, format: 'jwk' });
  return { ...pub, privateKey, sign: signerOf(privateKey).sign };
}

function newStoredKey(): StoredKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const private_jwk = privateKey.export({ format: 'jwk' }) as JWK;
  return { created_at: new Date().toISOString(), private_jwk, public_jwk: publicJwkOf(private_jwk) };
}

function readKeyFile(path: string): KeyFile {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as KeyFile;
  if (parsed.version !== 1 || !Array.isArray(parsed.keys) || !parsed.keys[0]?.private_jwk) {
    throw new Error(`${path} is not a Fuse Gate signing key file`);
  }
  return parsed;
}

/** Writes atomically with mode 0600: the file holds a private key. */
function writeKeyFile(path: string, file: KeyFile): void {
  ensureDir(dirname(path));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

const cosigns = (k: StoredKey, now: number) => !!k.private_jwk && !!k.cosign_until && Date.parse(k.cosign_until) > now;

async function keyringOf(file: KeyFile): Promise<Keyring> {
  const [first, ...rest] = file.keys;
  const current = await toSigningKey(first!);
  const all: PublicSigningKey[] = [current, ...(await Promise.all(rest.map(toPublicKey)))];
  const index = new Map(all.map((k) => [k.kid, k]));
  const cosigning = await Promise.all(rest.filter((k) => cosigns(k, Date.now())).map(toSigningKey));
  return { current, all, cosigning, byKid: (kid) => index.get(kid) };
}

/** Drops the private half of retired keys whose overlap is over; true when something was dropped. */
function discardExpiredPrivateKeys(file: KeyFile, now: number): boolean {
  let changed = false;
  file.keys = file.keys.map((k, i) => {
    if (i === 0 || !k.private_jwk || cosigns(k, now)) return k;
    changed = true;
    const { private_jwk: _drop, cosign_until: _until, ...rest } = k;
    return rest;
  });
  return changed;
}

export interface KeySource {
  SIGNING_KEY_FILE: string;
  SIGNING_KEY_JWK?: string | undefined;
}

/** Loads the keyring, creating the key file on first start. */
export async function loadKeyring(src: KeySource): Promise<Keyring> {
  if (src.SIGNING_KEY_JWK) {
    const private_jwk = JSON.parse(src.SIGNING_KEY_JWK) as JWK;
    const retired = existsSync(src.SIGNING_KEY_FILE) ? readKeyFile(src.SIGNING_KEY_FILE).keys : [];
    const own = await toPublicKey({ public_jwk: private_jwk, created_at: '' });
    const others = (await Promise.all(retired.map(async (k) => ({ k, kid: (await toPublicKey(k)).kid }))))
      .filter(({ kid }) => kid !== own.kid)
      .map(({ k }) => ({ public_jwk: k.public_jwk, created_at: k.created_at, retired_at: k.retired_at ?? k.created_at }));
    return keyringOf({
      version: 1,
      keys: [{ created_at: new Date(0).toISOString(), private_jwk, public_jwk: publicJwkOf(private_jwk) }, ...others],
    });
  }
  if (!existsSync(src.SIGNING_KEY_FILE)) writeKeyFile(src.SIGNING_KEY_FILE, { version: 1, keys: [newStoredKey()] });
  const file = readKeyFile(src.SIGNING_KEY_FILE);
  if (discardExpiredPrivateKeys(file, Date.now())) writeKeyFile(src.SIGNING_KEY_FILE, file);
  return keyringOf(file);
}

/**
 * Makes a new current key; the old one is retired and stays published. With
 * `cosignMs` > 0 the old key keeps its private half for that long, to co-sign
 * webhook deliveries; otherwise, and for every older key, the private half is
 * discarded at once. Returns the new keyring.
 */
export async function rotateSigningKey(path: string, cosignMs = 0): Promise<Keyring> {
  const file: KeyFile = existsSync(path) ? readKeyFile(path) : { version: 1 as const, keys: [] };
  const nowMs = Date.now();
  const now = new Date(nowMs).toISOString();
  const retired = file.keys.map((k, i): StoredKey => {
    const stamped = { ...k, retired_at: k.retired_at ?? now };
    if (i === 0 && cosignMs > 0 && k.private_jwk) return { ...stamped, cosign_until: new Date(nowMs + cosignMs).toISOString() };
    // Only the key just retired may co-sign: older keys lose their private half now.
    const { private_jwk: _drop, cosign_until: _until, ...rest } = stamped;
    return rest;
  });
  const next: KeyFile = { version: 1, keys: [newStoredKey(), ...retired] };
  writeKeyFile(path, next);
  return keyringOf(next);
}

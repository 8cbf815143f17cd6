/**
 * The service's Ed25519 signing keys.
 *
 * One key signs at a time ("current"); rotation retires it but keeps its
 * public half published under its `kid`, so every old receipt and checkpoint
 * stays verifiable. `kid` is the RFC 7638 JWK thumbprint of the public key.
 *
 * Storage: a JSON file (mode 0600) created on first start, or the private key
 * given in SIGNING_KEY_JWK. A retired key's private half is discarded.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { dirname } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { ensureDir } from '../startup-error.ts';

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

export interface SigningKey extends PublicSigningKey {
  privateKey: KeyObject;
}

export interface Keyring {
  current: SigningKey;
  /** Current first, then retired keys, newest first. */
  all: PublicSigningKey[];
  byKid(kid: string): PublicSigningKey | undefined;
}

interface StoredKey {
  created_at: string;
  retired_at?: string;
  /** Present for the current key only. */
  private_jwk?: JWK;
  public_jwk: JWK;
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
  return { ...pub, privateKey: createPrivateKey({ key: stored.private_jwk as never, format: 'jwk' }) };
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

async function keyringOf(file: KeyFile): Promise<Keyring> {
  const [first, ...rest] = file.keys;
  const current = await toSigningKey(first!);
  const all: PublicSigningKey[] = [current, ...(await Promise.all(rest.map(toPublicKey)))];
  const index = new Map(all.map((k) => [k.kid, k]));
  return { current, all, byKid: (kid) => index.get(kid) };
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
  return keyringOf(readKeyFile(src.SIGNING_KEY_FILE));
}

/** Makes a new current key; the old one is retired and stays published. Returns the new keyring. */
export async function rotateSigningKey(path: string): Promise<Keyring> {
  const file = existsSync(path) ? readKeyFile(path) : { version: 1 as const, keys: [] };
  const now = new Date().toISOString();
  const retired = file.keys.map(({ private_jwk: _drop, ...k }) => ({ ...k, retired_at: k.retired_at ?? now }));
  const next: KeyFile = { version: 1, keys: [newStoredKey(), ...retired] };
  writeKeyFile(path, next);
  return keyringOf(next);
}

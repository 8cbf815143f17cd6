/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, the format of
 * Go's golang.org/x/mod/sumdb/note, and C2SP tlog checkpoints
 * (c2sp.org/tlog-checkpoint) as their body.
 *
 *   key hash  = SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]
 *   signature = "— " name " " base64(key hash || Ed25519(note text)) "\n"
 *   verifier  = name "+" hex(key hash) "+" base64(0x01 || public key)
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { signEd25519 } from './ed25519.ts';
import type { Hash } from './merkle.ts';

const ED25519_ALG = 0x01;
const EM_DASH = '\u2014';
/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw key follows. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export function noteKeyHash(name: string, rawPublicKey: Uint8Array): Buffer {
  return createHash('sha256')
    .update(Buffer.from(name + '\n', 'utf8'))
    .update(Buffer.from([ED25519_ALG]))
    .update(rawPublicKey)
    .digest()
    .subarray(0, 4);
}

export function isValidNoteName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** The verifier key string that Go's note.NewVerifier accepts. */
export function verifierKey(name: string, rawPublicKey: Uint8Array): string {
  if (!isValidNoteName(name)) throw new Error(`invalid note key name "${name}"`);
  const hash = noteKeyHash(name, rawPublicKey).toString('hex');
  return `${name}+${hash}+${Buffer.concat([Buffer.from([ED25519_ALG]), rawPublicKey]).toString('base64')}`;
}

/** Signs `text` (which must end in a newline) as a note by `name`. */
export function signNote(text: string, name: string, privateKey: KeyObject, rawPublicKey: Uint8Array): string {
  if (!text.endsWith('\n')) throw new Error('note text must end with a newline');
  const sig = signEd25519(Buffer.from(text, 'utf8'), privateKey);
  const blob = Buffer.concat([noteKeyHash(name, rawPublicKey), sig]).toString('base64');
  return `${text}\n${EM_DASH} ${name} ${blob}\n`;
}

export interface ParsedVerifier {
  name: string;
  keyHash: Buffer;
  publicKey: KeyObject;
  raw: Buffer;
}

/** Parses a verifier key (`name+hash+base64`); the base64 part may itself contain '+'. */
export function parseVerifierKey(vkey: string): ParsedVerifier {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new Error('malformed verifier key');
  const name = vkey.slice(0, first);
  const hashHex = vkey.slice(first + 1, second);
  const key = Buffer.from(vkey.slice(second + 1), 'base64');
  if (!/^[0-9a-f]{8}$/.test(hashHex) || key.length !== 33 || key[0] !== ED25519_ALG) throw new Error('malformed verifier key');
  const raw = key.subarray(1);
  const keyHash = Buffer.from(hashHex, 'hex');
  if (!noteKeyHash(name, raw).equals(keyHash)) throw new Error('verifier key hash does not match its key');
  return { name, keyHash, raw, publicKey: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' }) };
}

/**
 * Checks a signed note against a verifier key; returns the note text when a
 * signature line of that key verifies. Throws otherwise.
 */
export function openNote(note: string, vkey: string): string {
  const v = parseVerifierKey(vkey);
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new Error('malformed note: no signature block');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  for (const line of lines) {
    const m = /^\u2014 (\S+) (\S+)$/u.exec(line);
    if (!m) throw new Error('malformed signature line');
    if (m[1] !== v.name) continue;
    const blob = Buffer.from(m[2]!, 'base64');
    if (blob.length !== 68 || !blob.subarray(0, 4).equals(v.keyHash)) continue;
    if (verify(null, Buffer.from(text, 'utf8'), v.publicKey, blob.subarray(4))) return text;
    throw new Error('note signature does not verify');
  }
  throw new Error('no signature by this key');
}

export interface Checkpoint {
  origin: string;
  size: number;
  root: Hash;
}

/** The body of a C2SP tlog checkpoint: origin, size, base64 root, each on its own line. */
export function checkpointText(c: Checkpoint): string {
  return `${c.origin}\n${c.size}\n${Buffer.from(c.root).toString('base64')}\n`;
}

/**
 * Parses a checkpoint body as strictly as Go's tlog.ParseTree and C2SP
 * tlog-checkpoint: every line ends in a newline; a non-empty origin; the size
 * in decimal without a sign or leading zeros, at most 2^53 - 1 (exact in a JS
 * number); the root in padded standard base64 of exactly 32 bytes; then only
 * non-empty extension lines.
 */
export function parseCheckpointText(text: string): Checkpoint {
  if (!text.endsWith('\n')) throw new Error('malformed checkpoint: it must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  const [origin, size, root, ...extensions] = lines;
  if (!origin || size === undefined || root === undefined) throw new Error('malformed checkpoint: origin, size and root lines are required');
  if (!/^(0|[1-9][0-9]*)$/.test(size)) throw new Error('malformed checkpoint size: decimal digits, no sign, no leading zeros');
  const n = Number(size);
  if (!Number.isSafeInteger(n)) throw new Error('checkpoint size beyond 2^53 - 1');
  if (!/^[A-Za-z0-9+/]{43}=$/.test(root)) throw new Error('malformed checkpoint root: 32 bytes of padded standard base64');
  if (extensions.some((l) => l === '')) throw new Error('malformed checkpoint: empty extension line');
  return { origin, size: n, root: new Uint8Array(Buffer.from(root, 'base64')) };
}

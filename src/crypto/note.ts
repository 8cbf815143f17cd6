/**
 * C2SP signed notes (c2sp.org/signed-note) with Ed25519 keys, the format of
 * Go's golang.org/x/mod/sumdb/note, and C2SP tlog checkpoints
 * (c2sp.org/tlog-checkpoint) as their body.
 *
 *   key hash  = SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]
 *   signature = "— " name " " base64(key hash || Ed25519(note text)) "\n"
 *   verifier  = name "+" hex(key hash) "+" base64(0x01 || public key)
 */
import { base64, fromBase64 } from './base64.ts';
import { concatBytes, equalBytes, toHex, utf8 } from './bytes.ts';
import { type Hash } from './merkle.ts';
import { ProofError } from './proof-error.ts';
import { sha256, verifier, type Signer } from './platform.ts';

const ED25519_ALG = 0x01;
const EM_DASH = '\u2014';

export function noteKeyHash(name: string, rawPublicKey: Uint8Array): Uint8Array {
  return sha256(concatBytes(utf8(`${name}\n`), new Uint8Array([ED25519_ALG]), rawPublicKey)).subarray(0, 4);
}

export function isValidNoteName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** The verifier key string that Go's note.NewVerifier accepts. */
export function verifierKey(name: string, rawPublicKey: Uint8Array): string {
  if (!isValidNoteName(name)) throw new Error(`invalid note key name "${name}"`);
  return `${name}+${toHex(noteKeyHash(name, rawPublicKey))}+${base64(concatBytes(new Uint8Array([ED25519_ALG]), rawPublicKey))}`;
}

/** Signs `text` (which must end in a newline) as a note by `name`. */
export function signNote(text: string, name: string, signer: Signer): string {
  if (!text.endsWith('\n')) throw new Error('note text must end with a newline');
  const blob = base64(concatBytes(noteKeyHash(name, signer.raw), signer.sign(utf8(text))));
  return `${text}\n${EM_DASH} ${name} ${blob}\n`;
}

export interface ParsedVerifier {
  name: string;
  keyHash: Uint8Array;
  raw: Uint8Array;
}

/** Parses a verifier key (`name+hash+base64`); the base64 part may itself contain '+'. */
export function parseVerifierKey(vkey: string): ParsedVerifier {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new ProofError('malformed verifier key');
  const name = vkey.slice(0, first);
  const hashHex = vkey.slice(first + 1, second);
  let key: Uint8Array;
  try {
    key = fromBase64(vkey.slice(second + 1));
  } catch {
    throw new ProofError('malformed verifier key');
  }
  if (!/^[0-9a-f]{8}$/.test(hashHex) || key.length !== 33 || key[0] !== ED25519_ALG) throw new ProofError('malformed verifier key');
  const raw = key.subarray(1);
  const keyHash = noteKeyHash(name, raw);
  if (toHex(keyHash) !== hashHex) throw new ProofError('the verifier key hash does not match its key');
  return { name, keyHash, raw };
}

/** A signed note's text (up to and with the newline before the blank line) and its signature lines (without their newlines). */
export function noteParts(note: string): { text: string; lines: string[] } {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new ProofError('malformed note: no signature block');
  return { text: note.slice(0, split + 1), lines: note.slice(split + 2, -1).split('\n') };
}

const SIGNATURE_LINE = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/u;

/** Splits a signature line (without its newline) into name and signature bytes, or undefined when it is not one. */
export function parseSignatureLine(line: string): { name: string; blob: Uint8Array } | undefined {
  const m = SIGNATURE_LINE.exec(line);
  if (!m) return undefined;
  try {
    return { name: m[1]!, blob: fromBase64(m[2]!) };
  } catch {
    return undefined;
  }
}

/**
 * Checks a signed note against a verifier key; resolves to the note text when
 * a signature line of that key verifies. Rejects with a ProofError otherwise.
 */
export async function openNote(note: string, vkey: string): Promise<string> {
  const v = parseVerifierKey(vkey);
  const { text, lines } = noteParts(note);
  for (const line of lines) {
    const sl = parseSignatureLine(line);
    if (!sl) throw new ProofError('malformed signature line');
    if (sl.name !== v.name || sl.blob.length !== 68 || !equalBytes(sl.blob.subarray(0, 4), v.keyHash)) continue;
    if (await verifier.verify(v.raw, utf8(text), sl.blob.subarray(4))) return text;
    throw new ProofError('the note signature does not verify');
  }
  throw new ProofError(`the note carries no signature by ${v.name}`);
}

/** The origin line of a note, read before its signature is checked (to pick the verifier key). */
export const noteOrigin = (note: string): string => note.split('\n', 1)[0] ?? '';

export interface Checkpoint {
  origin: string;
  size: number;
  root: Hash;
}

/** The body of a C2SP tlog checkpoint: origin, size, base64 root, each on its own line. */
export function checkpointText(c: Checkpoint): string {
  return `${c.origin}\n${c.size}\n${base64(c.root)}\n`;
}

/**
 * Parses a checkpoint body as strictly as Go's tlog.ParseTree and C2SP
 * tlog-checkpoint: every line ends in a newline; a non-empty origin; the size
 * in decimal without a sign or leading zeros, at most 2^53 - 1 (exact in a JS
 * number); the root in padded standard base64 of exactly 32 bytes; then only
 * non-empty extension lines.
 */
export function parseCheckpointText(text: string): Checkpoint {
  if (!text.endsWith('\n')) throw new ProofError('malformed checkpoint: it must end with a newline');
  const lines = text.slice(0, -1).split('\n');
  const [origin, size, root, ...extensions] = lines;
  if (!origin || size === undefined || root === undefined)
    throw new ProofError('malformed checkpoint: origin, size and root lines are required');
  if (!/^(0|[1-9][0-9]*)$/.test(size)) throw new ProofError('malformed checkpoint size: decimal digits, no sign, no leading zeros');
  const n = Number(size);
  if (!Number.isSafeInteger(n)) throw new ProofError('checkpoint size beyond 2^53 - 1');
  if (!/^[A-Za-z0-9+/]{43}=$/.test(root)) throw new ProofError('malformed checkpoint root: 32 bytes of padded standard base64');
  if (extensions.some((l) => l === '')) throw new ProofError('malformed checkpoint: empty extension line');
  return { origin, size: n, root: fromBase64(root) };
}

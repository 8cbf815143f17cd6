/**
 * C2SP tlog-cosignature (c2sp.org/tlog-cosignature): a witness's timestamped
 * Ed25519 signature over a checkpoint, carried as one more signed-note
 * signature line beside the log's own.
 *
 *   key ID    = SHA-256(name || 0x0A || 0x04 || 32-byte public key)[:4]
 *   message   = "cosignature/v1\ntime " decimal(timestamp) "\n" || checkpoint body
 *   line      = "— " name " " base64(key ID || uint64be(timestamp) || Ed25519(message)) "\n"
 *   vkey      = name "+" hex(key ID) "+" base64(0x04 || public key)
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { signEd25519 } from './ed25519.ts';
import { isValidNoteName } from './note.ts';

/** The signature type of cosignature/v1 (Ed25519) in key IDs and vkeys. */
export const COSIGNATURE_ALG = 0x04;
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const LINE = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/u;

export interface CosignerKey {
  name: string;
  keyId: Buffer;
  raw: Buffer;
  publicKey: KeyObject;
  /** The vkey string exactly as given. */
  vkey: string;
}

export function cosignerKeyId(name: string, rawPublicKey: Uint8Array): Buffer {
  return createHash('sha256').update(`${name}\n`, 'utf8').update(Buffer.from([COSIGNATURE_ALG])).update(rawPublicKey).digest().subarray(0, 4);
}

/** The vkey of a cosigner (what a witness policy names). */
export function cosignerVkey(name: string, rawPublicKey: Uint8Array): string {
  if (!isValidNoteName(name)) throw new Error(`invalid witness name "${name}"`);
  return `${name}+${cosignerKeyId(name, rawPublicKey).toString('hex')}+${Buffer.concat([Buffer.from([COSIGNATURE_ALG]), rawPublicKey]).toString('base64')}`;
}

/** Parses a cosignature/v1 vkey; throws with the reason when it is not one. */
export function parseCosignerKey(vkey: string): CosignerKey {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new Error('a vkey is name+keyid+base64');
  const name = vkey.slice(0, first);
  const idHex = vkey.slice(first + 1, second);
  const b64 = vkey.slice(second + 1);
  if (!isValidNoteName(name)) throw new Error(`invalid witness name "${name}"`);
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new Error('the key ID must be 8 lowercase hex digits');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw new Error('the key is not standard base64');
  const key = Buffer.from(b64, 'base64');
  if (key.length !== 33) throw new Error('the key must be a type byte and 32 bytes of Ed25519 public key');
  if (key[0] !== COSIGNATURE_ALG) throw new Error(`key type 0x${key[0]!.toString(16).padStart(2, '0')} is not cosignature/v1 (0x04)`);
  const raw = key.subarray(1);
  const keyId = Buffer.from(idHex, 'hex');
  if (!cosignerKeyId(name, raw).equals(keyId)) throw new Error('the key ID does not match the name and key');
  return { name, keyId, raw, vkey, publicKey: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' }) };
}

/** The message a cosignature/v1 signs: its header and the checkpoint body (the note text, ending in a newline). */
export function cosignedMessage(body: string, timestamp: number): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${body}`, 'utf8');
}

/** Makes a cosignature line (for tests and tools; the gate itself never cosigns). */
export function cosign(body: string, timestamp: number, name: string, privateKey: KeyObject, rawPublicKey: Uint8Array): string {
  const ts = Buffer.alloc(8);
  ts.writeBigUInt64BE(BigInt(timestamp));
  const sig = signEd25519(cosignedMessage(body, timestamp), privateKey);
  return `\u2014 ${name} ${Buffer.concat([cosignerKeyId(name, rawPublicKey), ts, sig]).toString('base64')}\n`;
}

/** Splits a signature line (without its newline) into name and signature bytes, or undefined when it is not one. */
export function parseSignatureLine(line: string): { name: string; blob: Buffer } | undefined {
  const m = LINE.exec(line);
  return m ? { name: m[1]!, blob: Buffer.from(m[2]!, 'base64') } : undefined;
}

/**
 * Verifies one signature line as a cosignature by `key` over the checkpoint
 * `body`. Returns its timestamp (seconds), or undefined when the line is not by
 * this key (another name or key ID: ignored, as C2SP says). Throws when it is
 * by this key and does not verify.
 */
export function verifyCosignature(body: string, line: string, key: CosignerKey): number | undefined {
  const sl = parseSignatureLine(line.replace(/\n$/, ''));
  if (!sl || sl.name !== key.name || sl.blob.length < 4 || !sl.blob.subarray(0, 4).equals(key.keyId)) return undefined;
  if (sl.blob.length !== 76) throw new Error(`cosignature by ${key.name} is not 76 bytes`);
  const ts = sl.blob.readBigUInt64BE(4);
  if (ts > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`cosignature by ${key.name} has an impossible time`);
  const timestamp = Number(ts);
  if (!verify(null, cosignedMessage(body, timestamp), key.publicKey, sl.blob.subarray(12))) throw new Error(`cosignature by ${key.name} does not verify`);
  return timestamp;
}

/** The signature lines of a signed note (each without its newline), after the blank line that ends its text. */
export function noteParts(note: string): { text: string; lines: string[] } {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new Error('malformed note: no signature block');
  return { text: note.slice(0, split + 1), lines: note.slice(split + 2, -1).split('\n') };
}

export interface CosignatureFound {
  name: string;
  vkey: string;
  timestamp: number;
}

/**
 * The witnesses among `keys` that validly cosigned `note`'s checkpoint. A
 * line by a known key that does not verify throws (a tampered cosignature);
 * lines by unknown keys are ignored.
 */
export function cosignersOf(note: string, keys: readonly CosignerKey[]): CosignatureFound[] {
  const { text, lines } = noteParts(note);
  const found = new Map<string, CosignatureFound>();
  for (const line of lines) {
    for (const key of keys) {
      const timestamp = verifyCosignature(text, line, key);
      if (timestamp !== undefined) found.set(key.name, { name: key.name, vkey: key.vkey, timestamp });
    }
  }
  return [...found.values()];
}

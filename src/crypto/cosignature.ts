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
import { base64, fromBase64 } from './base64.ts';
import { concatBytes, equalBytes, toHex, utf8 } from './bytes.ts';
import { ProofError } from './proof-error.ts';
import { isValidNoteName, noteParts, parseSignatureLine } from './note.ts';
import { sha256, verifier, type Signer } from './platform.ts';

/** The signature type of cosignature/v1 (Ed25519) in key IDs and vkeys. */
export const COSIGNATURE_ALG = 0x04;

export interface CosignerKey {
  name: string;
  keyId: Uint8Array;
  /** The raw 32-byte Ed25519 public key. */
  raw: Uint8Array;
  /** The vkey string exactly as given. */
  vkey: string;
}

export function cosignerKeyId(name: string, rawPublicKey: Uint8Array): Uint8Array {
  return sha256(concatBytes(utf8(`${name}\n`), new Uint8Array([COSIGNATURE_ALG]), rawPublicKey)).subarray(0, 4);
}

/** The vkey of a cosigner (what a witness policy names). */
export function cosignerVkey(name: string, rawPublicKey: Uint8Array): string {
  if (!isValidNoteName(name)) throw new Error(`invalid witness name "${name}"`);
  return `${name}+${toHex(cosignerKeyId(name, rawPublicKey))}+${base64(concatBytes(new Uint8Array([COSIGNATURE_ALG]), rawPublicKey))}`;
}

/** Parses a cosignature/v1 vkey; throws with the reason when it is not one. */
export function parseCosignerKey(vkey: string): CosignerKey {
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first <= 0 || second < 0) throw new ProofError('a vkey is name+keyid+base64');
  const name = vkey.slice(0, first);
  const idHex = vkey.slice(first + 1, second);
  const b64 = vkey.slice(second + 1);
  if (!isValidNoteName(name)) throw new ProofError(`invalid witness name "${name}"`);
  if (!/^[0-9a-f]{8}$/.test(idHex)) throw new ProofError('the key ID must be 8 lowercase hex digits');
  let key: Uint8Array;
  try {
    key = fromBase64(b64);
  } catch {
    throw new ProofError('the key is not standard base64');
  }
  if (key.length !== 33) throw new ProofError('the key must be a type byte and 32 bytes of Ed25519 public key');
  if (key[0] !== COSIGNATURE_ALG) throw new ProofError(`key type 0x${key[0]!.toString(16).padStart(2, '0')} is not cosignature/v1 (0x04)`);
  const raw = key.subarray(1);
  const keyId = cosignerKeyId(name, raw);
  if (toHex(keyId) !== idHex) throw new ProofError('the key ID does not match the name and key');
  return { name, keyId, raw, vkey };
}

/** The message a cosignature/v1 signs: its header and the checkpoint body (the note text, ending in a newline). */
export function cosignedMessage(body: string, timestamp: number): Uint8Array {
  return utf8(`cosignature/v1\ntime ${timestamp}\n${body}`);
}

/** Makes a cosignature line (for tests and tools; the gate itself never cosigns). */
export function cosign(body: string, timestamp: number, name: string, signer: Signer): string {
  const ts = new Uint8Array(8);
  new DataView(ts.buffer).setBigUint64(0, BigInt(timestamp));
  const sig = signer.sign(cosignedMessage(body, timestamp));
  return `\u2014 ${name} ${base64(concatBytes(cosignerKeyId(name, signer.raw), ts, sig))}\n`;
}

/**
 * Verifies one signature line as a cosignature by `key` over the checkpoint
 * `body`. Resolves to its timestamp (seconds), or undefined when the line is
 * not by this key (another name or key ID: ignored, as C2SP says). Rejects
 * when it is by this key and does not verify; `who` names the witness in the
 * error (default: the key's name).
 */
export async function verifyCosignature(body: string, line: string, key: CosignerKey, who = key.name): Promise<number | undefined> {
  const sl = parseSignatureLine(line.replace(/\n$/, ''));
  if (!sl || sl.name !== key.name || sl.blob.length < 4 || !equalBytes(sl.blob.subarray(0, 4), key.keyId)) return undefined;
  if (sl.blob.length !== 76) throw new ProofError(`the cosignature by ${who} is not 76 bytes`);
  const ts = new DataView(sl.blob.buffer, sl.blob.byteOffset + 4, 8).getBigUint64(0);
  if (ts > BigInt(Number.MAX_SAFE_INTEGER)) throw new ProofError(`the cosignature by ${who} has an impossible time`);
  const timestamp = Number(ts);
  if (!(await verifier.verify(key.raw, cosignedMessage(body, timestamp), sl.blob.subarray(12))))
    throw new ProofError(`the cosignature by ${who} does not verify`);
  return timestamp;
}

export interface CosignatureFound {
  name: string;
  vkey: string;
  timestamp: number;
}

/**
 * The witnesses among `keys` that validly cosigned `note`'s checkpoint. A
 * line by a known key that does not verify rejects (a tampered cosignature),
 * naming the witness by `nameOf` (default: its key's name); lines by unknown
 * keys are ignored.
 */
export async function cosignersOf(
  note: string,
  keys: readonly CosignerKey[],
  nameOf = (k: CosignerKey) => k.name,
): Promise<CosignatureFound[]> {
  const { text, lines } = noteParts(note);
  const found = new Map<string, CosignatureFound>();
  for (const line of lines) {
    for (const key of keys) {
      const timestamp = await verifyCosignature(text, line, key, nameOf(key));
      if (timestamp !== undefined) found.set(key.name, { name: key.name, vkey: key.vkey, timestamp });
    }
  }
  return [...found.values()];
}

/**
 * A seal: one C2SP checkpoint (signed note) of a log at a tree size, and one
 * compact JWS whose payload is that checkpoint's body text (EdDSA, kid = the
 * RFC 7638 thumbprint of the signing key, typ `fusegate-checkpoint+jws`).
 *
 * Both are signed synchronously (ed25519.ts, about 20 us each here): a seal is
 * made once per write batch, not once per receipt, so it costs little per act.
 */
import type { Hash } from './merkle.ts';
import { checkpointText, signNote } from './note.ts';
import type { SigningKey } from './keys.ts';
import { compactJwsSync } from './jws.ts';
import { CHECKPOINT_TYP } from './receipt.ts';

export interface Seal {
  origin: string;
  tree_size: number;
  root: Hash;
  /** The signed note. */
  note: string;
  /** The compact JWS over the checkpoint body (the note's text before its signatures). */
  jws: string;
  kid: string;
}

export function makeSeal(origin: string, size: number, root: Hash, key: SigningKey): Seal {
  const body = checkpointText({ origin, size, root });
  return {
    origin,
    tree_size: size,
    root,
    note: signNote(body, origin, key),
    jws: compactJwsSync(body, key, CHECKPOINT_TYP),
    kid: key.kid,
  };
}

/**
 * The service's published Ed25519 keys (GET /crypto/public-key: current and
 * retired), and checkpoint notes opened with verifier keys derived from them
 * in the browser, so a page never relies on a verifier key the same answer
 * sent. The checks are the crypto core's (src/crypto/note.ts).
 */
import { fromBase64 } from '../crypto/base64.ts';
import type { PublicJwk } from '../crypto/jws-verify.ts';
import { noteOrigin, openNote, parseCheckpointText, verifierKey, type Checkpoint } from '../crypto/note.ts';
import { ProofError } from '../crypto/proof-error.ts';

export interface PublishedKey {
  kid: string;
  jwk: PublicJwk;
  public_key_base64: string;
}

export async function publishedKeys(base: string): Promise<PublishedKey[]> {
  const res = await fetch(base + '/crypto/public-key', { headers: { accept: 'application/json' } });
  const body = (await res.json()) as PublishedKey & { retired?: PublishedKey[] };
  return [body, ...(body.retired ?? [])].map((k) => ({
    kid: k.kid,
    jwk: { ...k.jwk, kid: k.kid },
    public_key_base64: k.public_key_base64,
  }));
}

/**
 * Opens a signed checkpoint of the log `origin` with any published key (a
 * pasted one may have CRLF line ends). Throws ProofError when no published
 * key signed it or a signature is bad.
 */
export async function openCheckpoint(
  note: string,
  origin: string,
  keys: PublishedKey[],
): Promise<Checkpoint & { body: string; verifierKey: string }> {
  const text = note.replace(/\r\n/g, '\n');
  const named = noteOrigin(text);
  if (named !== origin) throw new ProofError(`the checkpoint is for ${named || 'no log'}, not ${origin}`);
  for (const k of keys) {
    const vkey = verifierKey(origin, fromBase64(k.public_key_base64));
    let body: string;
    try {
      body = await openNote(text, vkey);
    } catch (e) {
      if (e instanceof ProofError && /no signature by/.test(e.message)) continue;
      throw e;
    }
    return { ...parseCheckpointText(body), body, verifierKey: vkey };
  }
  throw new ProofError('the checkpoint carries no signature by any published key');
}

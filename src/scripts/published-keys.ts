/**
 * The service's published Ed25519 keys (GET /crypto/public-key: current and
 * retired), and checkpoint notes opened with verifier keys derived from them
 * in the browser, so a page never relies on a verifier key the same answer sent.
 */
import type { PublicJwk } from './jws.ts';
import { CheckFailed, fromBase64, noteOrigin, openNote, parseCheckpoint, verifierKeyOf, type Checkpoint } from './tlog.ts';

export interface PublishedKey {
  kid: string;
  jwk: PublicJwk;
  public_key_base64: string;
}

export async function publishedKeys(base: string): Promise<PublishedKey[]> {
  const res = await fetch(base + '/crypto/public-key', { headers: { accept: 'application/json' } });
  const body = (await res.json()) as PublishedKey & { retired?: PublishedKey[] };
  return [body, ...(body.retired ?? [])].map((k) => ({ kid: k.kid, jwk: { ...k.jwk, kid: k.kid }, public_key_base64: k.public_key_base64 }));
}

/**
 * Opens a signed checkpoint of the log `origin` with any published key.
 * Throws CheckFailed when no published key signed it or a signature is bad.
 */
export async function openCheckpoint(note: string, origin: string, keys: PublishedKey[]): Promise<Checkpoint & { body: string; verifierKey: string }> {
  const named = noteOrigin(note);
  if (named !== origin) throw new CheckFailed(`the checkpoint is for ${named || 'no log'}, not ${origin}`);
  for (const k of keys) {
    const vkey = await verifierKeyOf(origin, fromBase64(k.public_key_base64));
    let body: string;
    try {
      body = await openNote(note, vkey);
    } catch (e) {
      if (e instanceof CheckFailed && /no signature by/.test(e.message)) continue;
      throw e;
    }
    return { ...parseCheckpoint(body), body, verifierKey: vkey };
  }
  throw new CheckFailed('the checkpoint carries no signature by any published key');
}

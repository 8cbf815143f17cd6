/**
 * Signed checkpoints of the logs: C2SP tlog-checkpoint bodies in C2SP signed
 * notes. The origin of a log is `<SITE_URL host>/<log name>`, and the note key
 * name is that origin (so each log has its own verifier key string, all made
 * from the service's one Ed25519 key; retired keys stay listed).
 */
import type { Keyring } from '../crypto/keys.ts';
import type { Ledger } from './ledger.ts';
import { checkpointText, signNote, verifierKey } from '../crypto/note.ts';
import type { Hash } from '../crypto/merkle.ts';
import { treeHead } from './log.ts';

/** What checkpoints need from the service (the app context has it; the ledger imports nothing from api/). */
export interface CheckpointSigner {
  config: { SITE_URL: string };
  keyring: Keyring;
  ledger: Pick<Ledger, 'read'>;
}

/** The host of each site URL seen: every log answer names its origin, and parsing the URL each time cost more than the rest of it. */
const hosts = new Map<string, string>();

export function logOrigin(siteUrl: string, log: string): string {
  let host = hosts.get(siteUrl);
  if (host === undefined) {
    host = new URL(siteUrl).host;
    if (hosts.size >= 16) hosts.clear();
    hosts.set(siteUrl, host);
  }
  return `${host}/${log}`;
}

/** Verifier keys of a log: the current signing key's first, then retired keys'. */
export function logVerifierKeys(ctx: CheckpointSigner, log: string): string[] {
  const origin = logOrigin(ctx.config.SITE_URL, log);
  return ctx.keyring.all.map((k) => verifierKey(origin, k.raw));
}

export interface SignedCheckpoint {
  origin: string;
  size: number;
  root: Hash;
  /** The exact signed note bytes. */
  note: string;
}

const cache = new Map<string, SignedCheckpoint>();

/** The signed checkpoint of `log` at `size` (default: now). Signatures are cached per size and key. */
export async function signedCheckpoint(ctx: CheckpointSigner, log: string, size?: number): Promise<SignedCheckpoint> {
  return signCheckpoint(ctx, log, await treeHead(ctx.ledger.read, log, size));
}

/**
 * Signs the checkpoint of a head the caller already holds: one this process
 * computed from the log itself (an append's root, a head it read). Never a
 * head taken from a request.
 */
export function signCheckpoint(ctx: CheckpointSigner, log: string, head: { size: number; root: Hash }): SignedCheckpoint {
  const origin = logOrigin(ctx.config.SITE_URL, log);
  const key = ctx.keyring.current;
  const cacheKey = `${origin}/${head.size}/${key.kid}`;
  const hit = cache.get(cacheKey);
  if (hit) return hit;
  const note = signNote(checkpointText({ origin, size: head.size, root: head.root }), origin, key);
  const cp = { origin, size: head.size, root: head.root, note };
  if (cache.size > 1024) cache.clear();
  cache.set(cacheKey, cp);
  return cp;
}

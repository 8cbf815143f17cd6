/**
 * What the companion logs (astl, triggers, clearing) answer about a leaf: its
 * index, leaf hash and RFC 9162 inclusion proof at a tree size, and the signed
 * checkpoint of that size. Proofs are made inside the write transaction (so a
 * stored idempotent answer has them; a fresh leaf's from its own append, with
 * no read); the checkpoint note is signed AFTER the commit, never inside it,
 * over the root the answer carries, and added by `withCheckpointNote`.
 */
import { z } from 'zod';
import { leafHash } from '../../crypto/merkle.ts';
import { logOrigin, signCheckpoint } from '../../ledger/checkpoint.ts';
import { cosignedCheckpoint } from '../../ledger/witnesses.ts';
import { inclusionProof, readEntries, treeHead, type Db, type Inclusion } from '../../ledger/log.ts';
import type { ActState } from '../../ledger/acts.ts';
import type { AppContext } from '../context.ts';
import type { Reply } from '../reply.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { decodeLeaf } from './leaf-decoders.ts';

export const checkpointSchema = z.object({
  log: z.string(),
  origin: z.string(),
  tree_size: z.number().int(),
  root_hash: z.string().describe('base64 RFC 9162 root of the log at tree_size'),
  note: z.string().optional().describe('the C2SP signed checkpoint note of that size (verify with GET /api/v1/logs/{log} verifier_key)'),
});

export const inclusionSchema = z.object({
  log: z.string(),
  index: z.number().int(),
  tree_size: z.number().int(),
  leaf_hash: z.string(),
  hashes: z.array(z.string()).describe('RFC 9162 inclusion proof, base64, leaf upwards'),
});

/** Inclusion of `index` and the (unsigned) checkpoint, at `size` (default index + 1). */
export async function proofAt(ctx: AppContext, db: Db, log: string, index: number, size = index + 1) {
  const p = await inclusionProof(db, log, index, size);
  const head = await treeHead(db, log, size);
  return proofAnswer(ctx, log, { index, size, leafHash: p.leafHash, hashes: p.hashes, root: head.root });
}

/** The answer's inclusion proof and (unsigned) checkpoint for an entry's proof at some size. */
export function proofAnswer(ctx: AppContext, log: string, p: Inclusion) {
  return {
    inclusion: { log, index: p.index, tree_size: p.size, leaf_hash: b64(p.leafHash), hashes: p.hashes.map(b64) },
    checkpoint: { log, origin: logOrigin(ctx.config.SITE_URL, log), tree_size: p.size, root_hash: b64(p.root) } as z.infer<
      typeof checkpointSchema
    >,
  };
}

/**
 * An act's answer completed once its whole group has run (`state.atGroupEnd`):
 * `fields` around the inclusion proof of entry `index` of `log` at the size the
 * group leaves the log at, so that the group's answers share one checkpoint
 * (one signature). Until then the object is empty; it is sent only after.
 */
export function provedAtGroupEnd(
  ctx: AppContext,
  state: ActState,
  log: string,
  index: number,
  fields: (proof: ReturnType<typeof proofAnswer>) => object,
): object {
  const answer = {};
  state.atGroupEnd((group) => Object.assign(answer, fields(proofAnswer(ctx, log, group.inclusion(log, index)))));
  return answer;
}

/** The answer with the signed note added to its `checkpoint` (first answers and idempotent replays alike). */
export function withCheckpointNote(ctx: AppContext, r: Reply): Reply {
  const body = r.body as Record<string, unknown> | null;
  const cp = body?.checkpoint as z.infer<typeof checkpointSchema> | undefined;
  if (r.status >= 300 || !cp || cp.note) return r;
  // The root is the one this service computed from the log for that size, when it first answered.
  // A size just appended has no cosignature yet (witnesses see it within a second): the log's note alone.
  const note = signCheckpoint(ctx, cp.log, { size: cp.tree_size, root: new Uint8Array(Buffer.from(cp.root_hash, 'base64')) }).note;
  return { ...r, body: { ...body, checkpoint: { ...cp, note } } };
}

export const feedQuery = z.object({
  start: z.coerce.number().int().nonnegative().optional().describe('first index (default: the newest page)'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** A public page of a log: entries with their decoded JSON, and the newest signed checkpoint. */
export async function feedPage(ctx: AppContext, log: string, q: z.infer<typeof feedQuery>) {
  const cp = await cosignedCheckpoint(ctx, log);
  const start = q.start ?? Math.max(0, cp.size - q.limit);
  const entries = await readEntries(ctx.ledger.read, log, start, Math.min(q.limit, Math.max(0, cp.size - start)));
  return {
    log,
    tree_size: cp.size,
    start,
    entries: entries.map((e) => ({
      index: e.index,
      leaf_hash: b64(leafHash(e.leaf)),
      created_at: e.created_at,
      ...decodeLeaf(log, e.leaf),
    })),
    ...(start + entries.length < cp.size ? { next: start + entries.length } : {}),
    ...(start > 0 ? { previous: Math.max(0, start - q.limit) } : {}),
    checkpoint: { log, origin: cp.origin, tree_size: cp.size, root_hash: b64(cp.root), note: cp.note },
    verifier_key_url: `${ctx.config.SITE_URL}/api/v1/logs/${log}`,
  };
}

/**
 * Inference-root sessions (SPEC 2.5, foundry layer 1): each sealed exchange is
 * a leaf of its session's RFC 9162 Merkle tree, in the order the ledger
 * committed them. A session belongs to the account whose key opened it (ownerId):
 * every key of that account may read and continue it.
 *
 * Each session is its own Merkle log (src/ledger/log.ts) named
 * `inference/<session id>`: an exchange appends one leaf and stores the
 * perfect subtrees it completes, and the root reads O(log n) stored hashes,
 * so nothing is re-hashed inside the write lock. Names with a '/' are private
 * logs, never listed or served by the public log routes.
 */
import type { Transaction } from './sql.ts';
import { appendLeaf, ensureLog, logSize, treeHead, type Db } from './log.ts';

export interface SessionLeaf {
  idx: number;
  leaf_hash: string;
  receipt_id: string;
  created_at: string;
}

export const sessionLog = (sessionId: string): string => `inference/${sessionId}`;

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** The session's leaves in order; undefined when the account `owner` has no session of that id. */
export async function sessionLeaves(db: Db, owner: string, sessionId: string): Promise<SessionLeaf[] | undefined> {
  const rs = await db.execute({
    sql: 'SELECT idx, leaf_hash, receipt_id, created_at FROM inference_leaves WHERE key_id = ? AND session_id = ? ORDER BY idx',
    args: [owner, sessionId],
  });
  if (rs.rows.length === 0) return undefined;
  return rs.rows.map((r) => ({
    idx: Number(r.idx),
    leaf_hash: String(r.leaf_hash),
    receipt_id: String(r.receipt_id),
    created_at: String(r.created_at),
  }));
}

/** How many exchanges a session of the account `owner` holds (one index lookup); undefined when it has none of that id. */
export async function sessionSize(db: Db, owner: string, sessionId: string): Promise<number | undefined> {
  const rs = await db.execute({
    sql: 'SELECT idx FROM inference_leaves WHERE session_id = ? AND key_id = ? ORDER BY idx DESC LIMIT 1',
    args: [sessionId, owner],
  });
  return rs.rows[0] ? Number(rs.rows[0].idx) + 1 : undefined;
}

/** A session of the account `owner` with its size and root (hex); undefined when it has none of that id. */
export async function readSession(
  db: Db,
  owner: string,
  sessionId: string,
): Promise<{ size: number; root: string; leaves: SessionLeaf[] } | undefined> {
  const leaves = await sessionLeaves(db, owner, sessionId);
  if (!leaves) return undefined;
  // The root at the size read, even if an exchange committed since.
  const head = await treeHead(db, sessionLog(sessionId), leaves.length);
  return { size: leaves.length, root: hex(head.root), leaves };
}

/**
 * Appends an exchange inside the caller's transaction: `leaf` is the exact
 * leaf data (the canonical JSON the seal hashes). Answers its index, its leaf
 * hash and the new root (hex), or null when the session already holds `max`.
 */
export async function appendSessionLeaf(
  tx: Transaction,
  leaf: { owner: string; sessionId: string; leaf: Uint8Array; receiptId: string; createdAt: string },
  max: number,
): Promise<{ idx: number; size: number; root: string; leafHash: string } | null> {
  const log = sessionLog(leaf.sessionId);
  await ensureLog(tx, log);
  if ((await logSize(tx, log)) >= max) return null;
  const { index, leafHash, root } = await appendLeaf(tx, log, leaf.leaf);
  await tx.execute({
    sql: 'INSERT INTO inference_leaves (session_id, idx, key_id, leaf_hash, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [leaf.sessionId, index, leaf.owner, hex(leafHash), leaf.receiptId, leaf.createdAt],
  });
  return { idx: index, size: index + 1, root: hex(root), leafHash: hex(leafHash) };
}

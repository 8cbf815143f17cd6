/**
 * Inference-root sessions (SPEC 2.5, foundry layer 1): each sealed exchange is
 * a leaf of its session's RFC 9162 Merkle tree, in the order the ledger
 * committed them. A session belongs to the key that opened it.
 */
import type { Transaction } from '@libsql/client';
import { rootOf } from '../crypto/merkle.ts';
import type { Db } from './log.ts';

export interface SessionLeaf {
  idx: number;
  leaf_hash: string;
  receipt_id: string;
  created_at: string;
}

/** The session's leaves in order; undefined when `keyId` has no session of that id. */
export async function sessionLeaves(db: Db, keyId: string, sessionId: string): Promise<SessionLeaf[] | undefined> {
  const rs = await db.execute({
    sql: 'SELECT idx, leaf_hash, receipt_id, created_at FROM inference_leaves WHERE key_id = ? AND session_id = ? ORDER BY idx',
    args: [keyId, sessionId],
  });
  if (rs.rows.length === 0) return undefined;
  return rs.rows.map((r) => ({ idx: Number(r.idx), leaf_hash: String(r.leaf_hash), receipt_id: String(r.receipt_id), created_at: String(r.created_at) }));
}

/** A session of `keyId` with its size and root; undefined when it has none of that id. */
export async function readSession(db: Db, keyId: string, sessionId: string): Promise<{ size: number; root: string; leaves: SessionLeaf[] } | undefined> {
  const leaves = await sessionLeaves(db, keyId, sessionId);
  return leaves && { size: leaves.length, root: sessionRoot(leaves.map((l) => l.leaf_hash)), leaves };
}

/** The session root (hex) over leaf hashes given in hex. */
function sessionRoot(leafHashes: readonly string[]): string {
  return Buffer.from(rootOf(leafHashes.map((h) => Buffer.from(h, 'hex')))).toString('hex');
}

/** Appends a leaf inside the caller's transaction; answers its index and the new root, or null when the session already holds `max` leaves. */
export async function appendSessionLeaf(
  tx: Transaction,
  leaf: { keyId: string; sessionId: string; leafHash: string; receiptId: string; createdAt: string },
  max: number,
): Promise<{ idx: number; size: number; root: string } | null> {
  const prior = (await sessionLeaves(tx, leaf.keyId, leaf.sessionId)) ?? [];
  const idx = prior.length;
  if (idx >= max) return null;
  await tx.execute({
    sql: 'INSERT INTO inference_leaves (session_id, idx, key_id, leaf_hash, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [leaf.sessionId, idx, leaf.keyId, leaf.leafHash, leaf.receiptId, leaf.createdAt],
  });
  return { idx, size: idx + 1, root: sessionRoot([...prior.map((p) => p.leaf_hash), leaf.leafHash]) };
}

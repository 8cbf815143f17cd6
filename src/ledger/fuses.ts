/** Fuses: the central object of the gate (SPEC 2.1, 3). */
import type { Client, Transaction } from './sql.ts';

import { FUSE_STATES, type FuseState } from '../domain/fuse.ts';

export { FUSE_STATES, type FuseState };

export interface Fuse {
  id: string;
  key_id: string;
  state: FuseState;
  label: string | null;
  created_at: string;
  updated_at: string;
}

export function rowToFuse(r: Record<string, unknown>): Fuse {
  return {
    id: String(r.id),
    key_id: String(r.key_id),
    state: String(r.state) as FuseState,
    label: r.label == null ? null : String(r.label),
    created_at: String(r.created_at),
    updated_at: String(r.updated_at),
  };
}

/** The fuse, or undefined when it does not exist. Ownership is the caller's check. */
export async function getFuse(db: Client | Transaction, id: string): Promise<Fuse | undefined> {
  const rs = await db.execute({
    sql: 'SELECT id, key_id, state, label, created_at, updated_at FROM fuses WHERE id = ?',
    args: [id],
  });
  return rs.rows[0] ? rowToFuse(rs.rows[0]) : undefined;
}

/** The fuses of `ids` that exist, by id, in one query (one statement text whatever the count). */
export async function getFuses(db: Client | Transaction, ids: Iterable<string>): Promise<Map<string, Fuse>> {
  const list = [...new Set(ids)];
  if (list.length === 0) return new Map();
  const where = db.dialect.oneOf('id', list);
  const rs = await db.execute({
    sql: `SELECT id, key_id, state, label, created_at, updated_at FROM fuses WHERE ${where.sql}`,
    args: where.args,
  });
  return new Map(rs.rows.map((r) => [String(r.id), rowToFuse(r)]));
}

/** Owner of the public drill fuses (no API key). */
export const DRILL_OWNER = '';
export const DRILL_FUSES = { live: 'fuse_drill_live', dead: 'fuse_drill_dead' } as const;

export async function createFuse(
  tx: Transaction,
  f: { id: string; keyId: string; state: FuseState; label: string | null; now: string },
): Promise<Fuse> {
  await tx.execute({
    sql: 'INSERT INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [f.id, f.keyId, f.state, f.label, f.now, f.now],
  });
  return { id: f.id, key_id: f.keyId, state: f.state, label: f.label, created_at: f.now, updated_at: f.now };
}

/**
 * Moves a fuse to `to` only if it is in one of `from` (a conditional update, so
 * concurrent changes cannot both win). Returns whether it moved.
 */
export async function transitionFuse(
  tx: Transaction,
  id: string,
  from: readonly FuseState[],
  to: FuseState,
  now: string,
): Promise<boolean> {
  const rs = await tx.execute({
    sql: `UPDATE fuses SET state = ?, updated_at = ? WHERE id = ? AND state IN (${from.map(() => '?').join(', ')})`,
    args: [to, now, id, ...from],
  });
  return rs.rowsAffected > 0;
}

export async function listFuses(db: Client, keyId: string, limit = 100, after?: string): Promise<Fuse[]> {
  const rs = await db.execute({
    sql: `SELECT id, key_id, state, label, created_at, updated_at FROM fuses WHERE key_id = ? ${after ? 'AND id > ?' : ''} ORDER BY id LIMIT ?`,
    args: after ? [keyId, after, limit] : [keyId, limit],
  });
  return rs.rows.map(rowToFuse);
}

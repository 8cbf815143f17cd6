/** Fuses: the central object of the gate (SPEC 2.1, 3). */
import type { Client, Transaction } from '@libsql/client';

export const FUSE_STATES = ['LIVE', 'ARMED', 'DEAD', 'UNSIGNED'] as const;
export type FuseState = (typeof FUSE_STATES)[number];

export interface Fuse {
  id: string;
  key_id: string;
  state: FuseState;
  label: string | null;
  created_at: string;
  updated_at: string;
}

function rowToFuse(r: Record<string, unknown>): Fuse {
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

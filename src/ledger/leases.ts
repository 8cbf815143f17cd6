/**
 * Leases on background work (migration 0360): one row per job name, held by one
 * node until `expires_at` (ms since the epoch, on the clocks of the nodes, which
 * must agree to well within a lease). Taking and renewing are one conditional
 * upsert, so two nodes never both get a lease: on PostgreSQL the second waits for
 * the first's row and then finds it held.
 */
import type { Client, Transaction } from './sql.ts';

export interface LeaseRow {
  name: string;
  holder: string;
  expires_at: number;
}

/**
 * Takes the lease `name` for `holder` until `until`, or renews it: true when
 * `holder` holds it now. Taken from another holder only once its lease ran out at `now`.
 */
export async function takeLease(tx: Transaction, name: string, holder: string, now: number, until: number): Promise<boolean> {
  const rs = await tx.execute({
    sql: `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
          ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
          WHERE leases.holder = excluded.holder OR leases.expires_at <= ?`,
    args: [name, holder, until, now],
  });
  return rs.rowsAffected === 1;
}

/** Gives the lease up at once (a node stopping), so that another node need not wait for it to run out. */
export async function releaseLease(tx: Transaction, name: string, holder: string): Promise<void> {
  await tx.execute({ sql: 'UPDATE leases SET expires_at = 0 WHERE name = ? AND holder = ?', args: [name, holder] });
}

export async function readLease(db: Client, name: string): Promise<LeaseRow | undefined> {
  const rs = await db.execute({ sql: 'SELECT name, holder, expires_at FROM leases WHERE name = ?', args: [name] });
  const r = rs.rows[0];
  return r ? { name: String(r.name), holder: String(r.holder), expires_at: Number(r.expires_at) } : undefined;
}

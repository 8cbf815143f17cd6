/**
 * Reads and small writes the account's management surface needs (the operator
 * API routes in api/gate/manage.ts and the dashboard): licence and ticket
 * lists, grant revocation scoped to the owner, and a webhook delivery retry.
 */
import { reportedLicenseState, type LicenseState, type StoredLicenseState } from '../domain/pas.ts';
import { OUTSTANDING_CHILD } from './pas.ts';
import type { Client, Transaction } from './sql.ts';

type Db = Client | Transaction;

export interface LicenseRow {
  license_id: string;
  /** As the snapshot reports it: ARMED when LIVE with an outstanding ticket. */
  state: LicenseState;
  updated_at: string;
  outstanding: number;
}

/** The owner's licence parents (charged at least once), with their outstanding tickets counted as the snapshot counts them. */
export async function listLicenses(db: Db, owner: string, now: string): Promise<LicenseRow[]> {
  const rs = await db.execute({
    sql: `SELECT l.license_id, l.state, l.updated_at,
                 (SELECT COUNT(*) FROM pas_tickets WHERE key_id = l.key_id AND license_id = l.license_id AND ${OUTSTANDING_CHILD}) AS outstanding
          FROM pas_licenses l WHERE l.key_id = ? ORDER BY l.license_id`,
    args: [now, owner],
  });
  return rs.rows.map((r) => {
    const outstanding = Number(r.outstanding);
    return {
      license_id: String(r.license_id),
      state: reportedLicenseState(String(r.state) as StoredLicenseState, outstanding > 0),
      updated_at: String(r.updated_at),
      outstanding,
    };
  });
}

export interface TicketRow {
  ticket_id: string;
  license_id: string;
  job_id: string;
  issued_at: string;
  expires_at: string;
  redeemed_at: string | null;
}

export async function listTickets(db: Db, owner: string, licenseId: string | undefined, limit: number): Promise<TicketRow[]> {
  const rs = await db.execute({
    sql: `SELECT id, license_id, job_id, issued_at, expires_at, redeemed_at FROM pas_tickets WHERE key_id = ? ${licenseId ? 'AND license_id = ?' : ''} ORDER BY issued_at DESC, id LIMIT ?`,
    args: licenseId ? [owner, licenseId, limit] : [owner, limit],
  });
  return rs.rows.map((r) => ({
    ticket_id: String(r.id),
    license_id: String(r.license_id),
    job_id: String(r.job_id),
    issued_at: String(r.issued_at),
    expires_at: String(r.expires_at),
    redeemed_at: r.redeemed_at == null ? null : String(r.redeemed_at),
  }));
}

/** Revokes the owner's active grant; false when it is not the owner's or already revoked. */
export async function revokeOwnedGrant(tx: Transaction, owner: string, id: string, now: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE pas_authority_grants SET revoked_at = ? WHERE id = ? AND key_id = ? AND revoked_at IS NULL',
    args: [now, id, owner],
  });
  return rs.rowsAffected === 1;
}

/**
 * Puts the owner's failed or pending delivery back in the queue for now; the
 * deliverer takes it on its next poll. Returns the state it had, or undefined
 * when the delivery is not the owner's.
 */
export async function retryDelivery(tx: Transaction, owner: string, deliveryId: string, nowMs: number): Promise<string | undefined> {
  const r = (
    await tx.execute({
      sql: `SELECT d.state FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE d.id = ? AND s.key_id = ?`,
      args: [deliveryId, owner],
    })
  ).rows[0];
  if (!r) return undefined;
  const state = String(r.state);
  if (state !== 'delivered') {
    await tx.execute({
      sql: "UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ? WHERE id = ?",
      args: [nowMs, deliveryId],
    });
  }
  return state;
}

/** Which of the dashboard's occasional areas the account has ever used: it shows their tabs only then. */
export interface AreasInUse {
  licences: boolean;
  grants: boolean;
  webhooks: boolean;
}

export async function areasInUse(db: Db, owner: string): Promise<AreasInUse> {
  const any = (sql: string) => `CASE WHEN EXISTS (${sql}) THEN 1 ELSE 0 END`;
  const r = (
    await db.execute({
      sql: `SELECT ${any('SELECT 1 FROM pas_licenses WHERE key_id = ?')} + ${any('SELECT 1 FROM pas_tickets WHERE key_id = ?')} AS licences,
                   ${any('SELECT 1 FROM pas_authority_grants WHERE key_id = ?')} AS grants,
                   ${any("SELECT 1 FROM webhook_subscriptions WHERE key_id = ? AND events = 'trigger'")} AS webhooks`,
      args: [owner, owner, owner, owner],
    })
  ).rows[0];
  return { licences: Number(r?.licences) > 0, grants: Number(r?.grants) > 0, webhooks: Number(r?.webhooks) > 0 };
}

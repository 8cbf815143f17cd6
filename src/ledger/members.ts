/**
 * Team accounts (docs/accounts.md#team-accounts): the people of an account and
 * their roles, invitations to join one, and which account a session acts in.
 * A person is a login; their id is the account they signed up with (their own
 * account, of which they are the first owner: insertLogin).
 */
import type { Client, Transaction } from './sql.ts';
import { newId } from '../ids.ts';
import { isTeamRole, type TeamRole } from '../domain/team-roles.ts';

export interface Member {
  person_id: string;
  email: string;
  role: TeamRole;
  created_at: string;
  /** Whether the account is this person's own (the one their sign-in was made with): they cannot be removed from it. */
  own: boolean;
}

const roleOf = (v: unknown): TeamRole => {
  if (!isTeamRole(v)) throw new Error(`unknown team role ${String(v)}`);
  return v;
};

export async function insertMember(
  tx: Transaction,
  m: { accountId: string; personId: string; role: TeamRole; now: string },
): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO account_members (account_id, person_id, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (account_id, person_id) DO NOTHING',
    args: [m.accountId, m.personId, m.role, m.now],
  });
}

/** The person's role in the account, or undefined when they are not one of its people. */
export async function memberRole(db: Client | Transaction, accountId: string, personId: string): Promise<TeamRole | undefined> {
  const r = (
    await db.execute({ sql: 'SELECT role FROM account_members WHERE account_id = ? AND person_id = ?', args: [accountId, personId] })
  ).rows[0];
  return r ? roleOf(r.role) : undefined;
}

/** The account's people, owners first, then by when they joined. */
export async function membersOf(db: Client | Transaction, accountId: string): Promise<Member[]> {
  const rs = await db.execute({
    sql: `SELECT m.person_id AS person_id, l.email AS email, m.role AS role, m.created_at AS created_at FROM account_members m JOIN account_logins l ON l.account_id = m.person_id
          WHERE m.account_id = ? ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'operator' THEN 1 ELSE 2 END, m.created_at, m.person_id`,
    args: [accountId],
  });
  return rs.rows.map((r) => ({
    person_id: String(r.person_id),
    email: String(r.email),
    role: roleOf(r.role),
    created_at: String(r.created_at),
    own: String(r.person_id) === accountId,
  }));
}

export interface Membership {
  account_id: string;
  account_name: string;
  role: TeamRole;
}

/** The accounts a person may act in, their own first, then by name. */
export async function membershipsOf(db: Client | Transaction, personId: string): Promise<Membership[]> {
  const rs = await db.execute({
    sql: `SELECT m.account_id AS account_id, a.name AS name, m.role AS role FROM account_members m JOIN accounts a ON a.id = m.account_id
          WHERE m.person_id = ? ORDER BY CASE WHEN m.account_id = ? THEN 0 ELSE 1 END, a.name, m.account_id`,
    args: [personId, personId],
  });
  return rs.rows.map((r) => ({ account_id: String(r.account_id), account_name: String(r.name), role: roleOf(r.role) }));
}

/** Why a change to the account's people is refused, or undefined when it may be made. */
export type MemberRefusal = 'not_a_member' | 'last_owner' | 'own_account';

/** How many owners the account has (read in the writing transaction, so that two changes cannot both take the last one away). */
async function ownerCount(tx: Transaction, accountId: string): Promise<number> {
  const r = (
    await tx.execute({ sql: "SELECT COUNT(*) AS n FROM account_members WHERE account_id = ? AND role = 'owner'", args: [accountId] })
  ).rows[0];
  return Number(r?.n ?? 0);
}

/** Gives a person of the account another role; refused when they are not one of its people, or when it would leave it with no owner. */
export async function setMemberRole(
  tx: Transaction,
  accountId: string,
  personId: string,
  role: TeamRole,
): Promise<{ from: TeamRole } | { refused: MemberRefusal }> {
  const from = await memberRole(tx, accountId, personId);
  if (!from) return { refused: 'not_a_member' };
  if (from === 'owner' && role !== 'owner' && (await ownerCount(tx, accountId)) <= 1) return { refused: 'last_owner' };
  await tx.execute({
    sql: 'UPDATE account_members SET role = ? WHERE account_id = ? AND person_id = ?',
    args: [role, accountId, personId],
  });
  return { from };
}

/**
 * Removes a person from the account; refused for the person whose own account
 * it is (their sign-in is this account's: they may be made a viewer, not
 * removed), and when it would leave the account with no owner.
 */
export async function removeMember(
  tx: Transaction,
  accountId: string,
  personId: string,
): Promise<{ role: TeamRole } | { refused: MemberRefusal }> {
  const role = await memberRole(tx, accountId, personId);
  if (!role) return { refused: 'not_a_member' };
  if (personId === accountId) return { refused: 'own_account' };
  if (role === 'owner' && (await ownerCount(tx, accountId)) <= 1) return { refused: 'last_owner' };
  await tx.execute({ sql: 'DELETE FROM account_members WHERE account_id = ? AND person_id = ?', args: [accountId, personId] });
  return { role };
}

/** The accounts other than their own of which the person is the only owner: deleting their sign-in would leave them ownerless. */
export async function accountsOnlyOwnedBy(db: Client | Transaction, personId: string): Promise<string[]> {
  const rs = await db.execute({
    sql: `SELECT m.account_id AS account_id FROM account_members m WHERE m.person_id = ? AND m.role = 'owner' AND m.account_id <> ?
          AND NOT EXISTS (SELECT 1 FROM account_members o WHERE o.account_id = m.account_id AND o.role = 'owner' AND o.person_id <> ?)`,
    args: [personId, personId, personId],
  });
  return rs.rows.map((r) => String(r.account_id));
}

/** Deletes every membership of the account and every one of the person whose own account it is, and its invitations (the account is being deleted). */
export async function deleteMemberships(tx: Transaction, accountId: string): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM account_members WHERE account_id = ? OR person_id = ?', args: [accountId, accountId] });
  await tx.execute({ sql: 'DELETE FROM account_invitations WHERE account_id = ?', args: [accountId] });
}

// ---------------------------------------------------------------- which account a session acts in

/** The person of a live session (by the hash of its secret) and the account it acts in (null: the person's own). */
export async function sessionPerson(
  db: Client | Transaction,
  secretHash: string,
  now: string,
): Promise<{ personId: string; actingAccountId: string | null } | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT account_id, acting_account_id FROM sessions WHERE secret_hash = ? AND expires_at > ?',
      args: [secretHash, now],
    })
  ).rows[0];
  return r
    ? { personId: String(r.account_id), actingAccountId: r.acting_account_id == null ? null : String(r.acting_account_id) }
    : undefined;
}

/** Makes the session act in `accountId` (the caller has checked the person is one of its people). */
export async function setSessionAccount(tx: Transaction, secretHash: string, accountId: string): Promise<void> {
  await tx.execute({ sql: 'UPDATE sessions SET acting_account_id = ? WHERE secret_hash = ?', args: [accountId, secretHash] });
}

// ---------------------------------------------------------------- invitations

export interface Invitation {
  id: string;
  account_id: string;
  account_name: string;
  email: string;
  role: TeamRole;
  /** The email of the person who invited, at reading time; else the id that invited (a key's, or a person's whose sign-in is gone). */
  invited_by_email: string;
  created_at: string;
  expires_at: string;
}

const rowToInvitation = (r: Record<string, unknown>): Invitation => ({
  id: String(r.id),
  account_id: String(r.account_id),
  account_name: String(r.account_name ?? ''),
  email: String(r.email),
  role: roleOf(r.role),
  // A key's invitation (POST /v1/members/invitations) names the key's id.
  invited_by_email: String(r.invited_by_email ?? r.invited_by ?? ''),
  created_at: String(r.created_at),
  expires_at: String(r.expires_at),
});

const INVITATION_COLUMNS = `i.id AS id, i.account_id AS account_id, a.name AS account_name, i.email AS email, i.role AS role, l.email AS invited_by_email, i.invited_by AS invited_by, i.created_at AS created_at, i.expires_at AS expires_at
  FROM account_invitations i JOIN accounts a ON a.id = i.account_id LEFT JOIN account_logins l ON l.account_id = i.invited_by`;

/** A new invitation; only the hash of its token is stored. */
export async function insertInvitation(
  tx: Transaction,
  inv: { tokenHash: string; accountId: string; email: string; role: TeamRole; invitedBy: string; now: string; expiresAt: string },
): Promise<string> {
  const id = newId('inv');
  await tx.execute({
    sql: 'INSERT INTO account_invitations (id, token_hash, account_id, email, role, invited_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    args: [id, inv.tokenHash, inv.accountId, inv.email, inv.role, inv.invitedBy, inv.now, inv.expiresAt],
  });
  return id;
}

/** The invitation a token opens, while it is unused, unrevoked and unexpired. */
export async function openInvitation(db: Client | Transaction, tokenHash: string, now: string): Promise<Invitation | undefined> {
  const r = (
    await db.execute({
      sql: `SELECT ${INVITATION_COLUMNS} WHERE i.token_hash = ? AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ?`,
      args: [tokenHash, now],
    })
  ).rows[0];
  return r ? rowToInvitation(r) : undefined;
}

/** The account's invitations still open, newest first. */
export async function openInvitationsOf(db: Client | Transaction, accountId: string, now: string): Promise<Invitation[]> {
  const rs = await db.execute({
    sql: `SELECT ${INVITATION_COLUMNS} WHERE i.account_id = ? AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ? ORDER BY i.created_at DESC, i.id`,
    args: [accountId, now],
  });
  return rs.rows.map(rowToInvitation);
}

/** Uses an open invitation once, for `personId`: false when it is no longer open (used, revoked or expired meanwhile). */
export async function acceptInvitation(tx: Transaction, tokenHash: string, personId: string, now: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE account_invitations SET accepted_at = ?, accepted_by = ? WHERE token_hash = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?',
    args: [now, personId, tokenHash, now],
  });
  return rs.rowsAffected === 1;
}

/** Revokes one of the account's open invitations: its link stops working. Its email when it was open, else undefined. */
export async function revokeInvitation(tx: Transaction, accountId: string, id: string, now: string): Promise<string | undefined> {
  const r = (
    await tx.execute({
      sql: 'UPDATE account_invitations SET revoked_at = ? WHERE account_id = ? AND id = ? AND accepted_at IS NULL AND revoked_at IS NULL RETURNING email',
      args: [now, accountId, id],
    })
  ).rows[0];
  return r ? String(r.email) : undefined;
}

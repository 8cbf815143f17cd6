/**
 * The audit log (docs/accounts.md#audit-log): what people did in an account's
 * dashboard and what its keys changed through the API, who and when. One row per action, written once and never
 * changed; read newest first by (account_id, id), since an id begins with its
 * time. No secret is written: a new key's entry names its id and name, never
 * its secret; an invitation's, the email and role, never its link.
 */
import { newSortableId, sortableTimePrefix } from '../ids.ts';
import type { Client, Transaction } from './sql.ts';

export interface AuditEntry {
  id: string;
  at: string;
  /** Who acted: a person (their id: ledger/members.ts), or a key through the API (its id). */
  actor_id: string;
  /** The person's email, or the key's name, when they acted. */
  actor_name: string;
  /** What they did: `key.created`, `fuse.blown`, `member.invited`... (docs/accounts.md#audit-log lists them). */
  action: string;
  /** What it was done to: a key or fuse id, an email; null when the action names none. */
  target: string | null;
  /** Non-secret facts of the action (a new cap, a role): never a secret. */
  detail: Record<string, unknown> | null;
}

export interface NewAuditEntry {
  accountId: string;
  actorId: string;
  /** The person's email, or the key's name. */
  actorName: string;
  action: string;
  target?: string | null | undefined;
  detail?: Record<string, unknown> | null | undefined;
  now?: Date;
}

const ID_PREFIX = 'aud';

export async function insertAuditEntry(tx: Transaction, e: NewAuditEntry): Promise<AuditEntry> {
  const now = e.now ?? new Date();
  const entry: AuditEntry = {
    id: newSortableId(ID_PREFIX, now.getTime()),
    at: now.toISOString(),
    actor_id: e.actorId,
    actor_name: e.actorName,
    action: e.action,
    target: e.target ?? null,
    detail: e.detail ?? null,
  };
  await tx.execute({
    sql: 'INSERT INTO audit_log (account_id, id, at, actor_id, actor_name, action, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    args: [
      e.accountId,
      entry.id,
      entry.at,
      entry.actor_id,
      entry.actor_name,
      entry.action,
      entry.target,
      entry.detail ? JSON.stringify(entry.detail) : null,
    ],
  });
  return entry;
}

export interface AuditFilter {
  /** Exactly this action, or every action of an area when it ends in `.` (`key.`). */
  action?: string | undefined;
  /** The acting person's email, or the acting key's name, exactly. */
  actor?: string | undefined;
  /** The target, exactly. */
  target?: string | undefined;
  /** At or after `from`, and before `to` (RFC 3339, UTC). */
  from?: string | undefined;
  to?: string | undefined;
}

/** The smallest id of an entry written at or after `iso`. */
const idAt = (iso: string) => `${ID_PREFIX}_${sortableTimePrefix(Date.parse(iso))}`;

/**
 * One page of the account's audit log, newest first: `limit` entries older
 * than the cursor `before` (an entry id), and `next`, the cursor of the page
 * after it, when there is one.
 */
export async function listAudit(
  db: Client,
  accountId: string,
  filter: AuditFilter,
  limit: number,
  before?: string,
): Promise<{ entries: AuditEntry[]; next?: string }> {
  const where = ['account_id = ?'];
  const args: Array<string | number> = [accountId];
  if (filter.action?.endsWith('.')) (where.push('action >= ? AND action < ?'), args.push(filter.action, filter.action.slice(0, -1) + '/'));
  else if (filter.action) (where.push('action = ?'), args.push(filter.action));
  if (filter.actor) (where.push('actor_name = ?'), args.push(filter.actor));
  if (filter.target) (where.push('target = ?'), args.push(filter.target));
  if (filter.from) (where.push('id >= ?'), args.push(idAt(filter.from)));
  if (filter.to) (where.push('id < ?'), args.push(idAt(filter.to)));
  if (before) (where.push('id < ?'), args.push(before));
  const rs = await db.execute({
    sql: `SELECT id, at, actor_id, actor_name, action, target, detail FROM audit_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`,
    args: [...args, limit + 1],
  });
  const entries = rs.rows.slice(0, limit).map((r): AuditEntry => ({
    id: String(r.id),
    at: String(r.at),
    actor_id: String(r.actor_id),
    actor_name: String(r.actor_name),
    action: String(r.action),
    target: r.target == null ? null : String(r.target),
    detail: r.detail == null ? null : (JSON.parse(String(r.detail)) as Record<string, unknown>),
  }));
  return rs.rows.length > limit ? { entries, next: entries.at(-1)!.id } : { entries };
}

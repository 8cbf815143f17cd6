/**
 * Reviews (docs/reviews.md): the question a HOLD puts to a person, one row per
 * held request. A review is opened, decided, used and expired by acts
 * (api/gate/reviews.ts) that write these rows under the write lock with
 * conditional updates, so of two answers racing only one changes the row.
 */
import type { GroupReader } from './acts.ts';
import type { Client, Transaction } from './sql.ts';
import type { Reviewer, ReviewState } from '../domain/review.ts';

export type { Reviewer, ReviewState };

export interface Review {
  id: string;
  account_id: string;
  /** The requesting key: it may never answer its own review. */
  key_id: string;
  /** The operation held (`prefinality_evaluate`, `execute_gate`, `execute_gate_bind`). */
  operation: string;
  /** The held request's fingerprint: an approval clears that request only. */
  fingerprint: string;
  request_key: string;
  hold_receipt_id: string;
  /** What the reviewer is shown: the rule that held, the amount, the counterparty... (private to the account). */
  summary: Record<string, unknown>;
  state: ReviewState;
  created_at: string;
  expires_at: string;
  opened_receipt_id: string | null;
  decided_at: string | null;
  decided_by: Reviewer | null;
  /** The commitment to `decided_by` that the decision's public receipt holds (a GO it clears names the same). */
  reviewer_commitment: string | null;
  note: string | null;
  decision_receipt_id: string | null;
  used_at: string | null;
  used_receipt_id: string | null;
  /** Approvals it needs: 2 when it opened above REVIEW_TWO_APPROVERS_ABOVE_USD, else 1. */
  approvals_required: number;
  /** The first of two approvals, while the review waits for the second. */
  first_approval: FirstApproval | null;
}

/** The first approval of a review that needs two: who, the commitment its receipt holds, the note, the receipt and when. */
export interface FirstApproval {
  reviewer: Reviewer;
  commitment: string;
  note: string | null;
  receipt_id: string;
  at: string;
}

/** The review a held request is found by: the requesting key, the operation and the request's fingerprint. */
export const requestKeyOf = (keyId: string, operation: string, fingerprint: string): string => `${keyId} ${operation} ${fingerprint}`;

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function rowToReview(r: Record<string, unknown>): Review {
  return {
    id: String(r.id),
    account_id: String(r.account_id),
    key_id: String(r.key_id),
    operation: String(r.operation),
    fingerprint: String(r.fingerprint),
    request_key: String(r.request_key),
    hold_receipt_id: String(r.hold_receipt_id),
    summary: JSON.parse(String(r.summary)) as Record<string, unknown>,
    state: String(r.state) as ReviewState,
    created_at: String(r.created_at),
    expires_at: String(r.expires_at),
    opened_receipt_id: text(r.opened_receipt_id),
    decided_at: text(r.decided_at),
    decided_by: r.decided_by === null || r.decided_by === undefined ? null : (JSON.parse(String(r.decided_by)) as Reviewer),
    reviewer_commitment: text(r.reviewer_commitment),
    note: text(r.note),
    decision_receipt_id: text(r.decision_receipt_id),
    used_at: text(r.used_at),
    used_receipt_id: text(r.used_receipt_id),
    approvals_required: Number(r.approvals_required ?? 1),
    first_approval:
      r.first_approval === null || r.first_approval === undefined ? null : (JSON.parse(String(r.first_approval)) as FirstApproval),
  };
}

/** Reviews by id, for a group of acts that use or decide them (ledger/acts.ts GroupReader). */
export const REVIEWS: GroupReader<Review> = {
  async read(db, ids) {
    const where = db.dialect.oneOf('id', ids);
    const rs = await db.execute({ sql: `SELECT * FROM reviews WHERE ${where.sql}`, args: where.args });
    return new Map(rs.rows.map((r) => [String(r.id), rowToReview(r)]));
  },
};

/** The latest review of each held request (by request key), for a group of HOLDs that may reuse it. */
export const LATEST_REVIEWS: GroupReader<Review> = {
  async read(db, keys) {
    const where = db.dialect.oneOf('request_key', keys);
    const rs = await db.execute({ sql: `SELECT * FROM reviews WHERE ${where.sql} ORDER BY created_at`, args: where.args });
    // In creation order: the last row of each request key is its latest review.
    return new Map(rs.rows.map((r) => [String(r.request_key), rowToReview(r)]));
  },
};

export async function getReview(db: Client | Transaction, id: string): Promise<Review | undefined> {
  const rs = await db.execute({ sql: 'SELECT * FROM reviews WHERE id = ?', args: [id] });
  return rs.rows[0] ? rowToReview(rs.rows[0]) : undefined;
}

/**
 * The account's reviews, newest first: those in `state` (a pending review past
 * its expiry still counts as pending here until the expiry job records it; the
 * view says it is expired).
 */
export async function listReviews(db: Client, accountId: string, state: ReviewState | undefined, limit: number): Promise<Review[]> {
  const rs = await db.execute({
    sql: `SELECT * FROM reviews WHERE account_id = ?${state ? ' AND state = ?' : ''} ORDER BY created_at DESC, id DESC LIMIT ?`,
    args: state ? [accountId, state, limit] : [accountId, limit],
  });
  return rs.rows.map(rowToReview);
}

export async function countPendingReviews(db: Client, accountId: string, now: string): Promise<number> {
  const rs = await db.execute({
    sql: "SELECT COUNT(*) AS n FROM reviews WHERE account_id = ? AND state = 'pending' AND expires_at > ?",
    args: [accountId, now],
  });
  return Number(rs.rows[0]!.n);
}

/** What a key's reviews did in a UTC month (YYYY-MM), for its statement: opened in it, and decided or expired in it. */
export interface MonthReviews {
  opened: number;
  approved: number;
  denied: number;
  expired: number;
}

export async function monthReviews(db: Client, keyId: string, month: string): Promise<MonthReviews> {
  const from = `${month}-01`;
  const to = `${month}-32`;
  const [opened, decided] = await Promise.all([
    db.execute({
      sql: 'SELECT COUNT(*) AS n FROM reviews WHERE key_id = ? AND created_at >= ? AND created_at < ?',
      args: [keyId, from, to],
    }),
    db.execute({
      sql: "SELECT state, COUNT(*) AS n FROM reviews WHERE key_id = ? AND state <> 'pending' AND decided_at >= ? AND decided_at < ? GROUP BY state",
      args: [keyId, from, to],
    }),
  ]);
  const by = new Map(decided.rows.map((r) => [String(r.state), Number(r.n)]));
  return {
    opened: Number(opened.rows[0]!.n),
    approved: by.get('approved') ?? 0,
    denied: by.get('denied') ?? 0,
    expired: by.get('expired') ?? 0,
  };
}

export async function insertReview(tx: Transaction, r: Review): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO reviews (id, account_id, key_id, operation, fingerprint, request_key, hold_receipt_id, summary, state, created_at, expires_at, approvals_required)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      r.id,
      r.account_id,
      r.key_id,
      r.operation,
      r.fingerprint,
      r.request_key,
      r.hold_receipt_id,
      JSON.stringify(r.summary),
      r.state,
      r.created_at,
      r.expires_at,
      r.approvals_required,
    ],
  });
}

/** Records the review's `review_opened` receipt, once. True for the call that recorded it. */
export async function setOpenedReceipt(tx: Transaction, id: string, receiptId: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE reviews SET opened_receipt_id = ? WHERE id = ? AND opened_receipt_id IS NULL',
    args: [receiptId, id],
  });
  return rs.rowsAffected === 1;
}

/**
 * Decides a pending review not yet expired at `now` (approved or denied), or
 * records its expiry (`expired`, only once past it). True only for the call
 * that changed it: of an approval, a denial and the expiry racing, one wins.
 */
export async function decideReview(
  tx: Transaction,
  id: string,
  to: Exclude<ReviewState, 'pending'>,
  now: string,
  receiptId: string,
  by: { reviewer: Reviewer; commitment: string; note: string | null } | null,
): Promise<boolean> {
  const due = to === 'expired' ? 'expires_at <= ?' : 'expires_at > ?';
  const rs = await tx.execute({
    sql: `UPDATE reviews SET state = ?, decided_at = ?, decided_by = ?, reviewer_commitment = ?, note = ?, decision_receipt_id = ?
          WHERE id = ? AND state = 'pending' AND ${due}`,
    args: [to, now, by ? JSON.stringify(by.reviewer) : null, by?.commitment ?? null, by?.note ?? null, receiptId, id, now],
  });
  return rs.rowsAffected === 1;
}

/**
 * Records the first of two approvals of a pending review not yet expired at
 * `first.at`, which stays pending for the second. True only for the call that
 * recorded it: of two first approvals racing, the other is decided again.
 */
export async function recordFirstApproval(tx: Transaction, id: string, first: FirstApproval): Promise<boolean> {
  const rs = await tx.execute({
    sql: "UPDATE reviews SET first_approval = ? WHERE id = ? AND state = 'pending' AND first_approval IS NULL AND approvals_required = 2 AND expires_at > ?",
    args: [JSON.stringify(first), id, first.at],
  });
  return rs.rowsAffected === 1;
}

/** Uses an approved review for the act of receipt `receiptId`, once. True for the call that used it. */
export async function useReview(tx: Transaction, id: string, now: string, receiptId: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: "UPDATE reviews SET used_at = ?, used_receipt_id = ? WHERE id = ? AND state = 'approved' AND used_at IS NULL",
    args: [now, receiptId, id],
  });
  return rs.rowsAffected === 1;
}

/** Pending reviews past their expiry at `now`, oldest first (the expiry job records them). */
export async function dueReviews(db: Client, now: string, limit: number): Promise<Review[]> {
  const rs = await db.execute({
    sql: "SELECT * FROM reviews WHERE state = 'pending' AND expires_at <= ? ORDER BY expires_at LIMIT ?",
    args: [now, limit],
  });
  return rs.rows.map(rowToReview);
}

/** Reviews whose `review_opened` receipt is not written yet (a process stopped between the HOLD and it). */
export async function unopenedReviews(db: Client, before: string, limit: number): Promise<Review[]> {
  const rs = await db.execute({
    sql: 'SELECT * FROM reviews WHERE opened_receipt_id IS NULL AND created_at <= ? ORDER BY created_at LIMIT ?',
    args: [before, limit],
  });
  return rs.rows.map(rowToReview);
}

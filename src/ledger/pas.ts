/**
 * Policy-administration persistence: licence parents, bind tickets, spend
 * leaves, manual-underwriting issues, authority grants, job receipts. Decides
 * nothing (the rules are in domain/pas.ts); every write runs in the caller's
 * transaction.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import type { Row } from '@libsql/client';
import { indexListRows, unpackIndexes } from './index-lists.ts';
import { readEntriesAt } from './log.ts';
import { receiptLocation, receiptsFromEntries, receiptsLogOf } from './receipts.ts';
import { ownerParts } from './accounts.ts';
import { insertRows, type Client, type Transaction } from './sql.ts';
import type { AuthorityGrant, LicenseState, StoredLicenseState } from '../domain/pas.ts';
import { reportedLicenseState } from '../domain/pas.ts';
import { nowIso } from '../ids.ts';
import type { ActState, GroupReader } from './acts.ts';

type Db = Client | Transaction;

export async function storedLicenseState(db: Db, keyId: string, licenseId: string): Promise<StoredLicenseState | undefined> {
  const rs = await db.execute({ sql: 'SELECT state FROM pas_licenses WHERE key_id = ? AND license_id = ?', args: [keyId, licenseId] });
  return rs.rows[0] ? (String(rs.rows[0].state) as StoredLicenseState) : undefined;
}

/** A ticket whose job another ticket already bound: it can never redeem (HALT replay), so it keeps nothing ARMED. */
const JOB_BOUND = 'EXISTS (SELECT 1 FROM pas_spend_leaves l WHERE l.key_id = pas_tickets.key_id AND l.job_id = pas_tickets.job_id)';

/**
 * A row of pas_tickets that keeps its parent ARMED, as SQL with one `?` (now):
 * issued, not redeemed, not expired, and its job not bound by another ticket.
 */
export const OUTSTANDING_CHILD = `redeemed_at IS NULL AND expires_at > ? AND NOT ${JOB_BOUND}`;

/** The key of a licence parent in LICENSE_VIEWS and GROUP_ISSUED_JOBS: its owner and its id. */
export const licenseKey = (keyId: string, licenseId: string): string => JSON.stringify([keyId, licenseId]);

/** A charged licence parent as its tables hold it: its stored state, and whether a child stored there is outstanding. */
export interface LicenseView {
  stored: StoredLicenseState;
  outstanding: boolean;
}

/**
 * A group's licence parents, read together (ledger/acts.ts GroupReader), in one
 * statement: each charged parent's stored state, and whether it has an
 * outstanding child (issued, not redeemed, not expired, its job not bound by
 * another ticket), which makes a LIVE parent ARMED. Whether one exists, not how
 * many: a count read every outstanding child of the parent on every pre-bind,
 * so a parent with many open jobs made each of them slower. A parent never
 * charged has no row.
 */
export const LICENSE_VIEWS: GroupReader<LicenseView> = {
  async read(db, keys) {
    const j = db.dialect.tuples(
      'j',
      ['k', 'key_id', 'license_id'],
      keys.map((k) => [k, ...(JSON.parse(k) as [string, string])]),
    );
    const rs = await db.execute({
      sql: `SELECT j.k, l.state,
                   EXISTS (SELECT 1 FROM pas_tickets WHERE key_id = l.key_id AND license_id = l.license_id AND ${OUTSTANDING_CHILD}) AS outstanding
            FROM ${j.sql} JOIN pas_licenses l ON l.key_id = j.key_id AND l.license_id = j.license_id`,
      args: [nowIso(), ...j.args],
    });
    return new Map(
      rs.rows.map((r) => [String(r.k), { stored: String(r.state) as StoredLicenseState, outstanding: Number(r.outstanding) === 1 }]),
    );
  },
};

/**
 * The jobs of the tickets a group's pre-binds issued under a licence parent
 * (by LICENSE_VIEWS key). Tickets are records, written once every act of the
 * group has run, so no read finds them yet: the pre-bind that issues one sets
 * this row (`state.setRow`) for the acts after it, and the table has none.
 */
export const GROUP_ISSUED_JOBS: GroupReader<readonly string[]> = {
  async read() {
    return new Map();
  },
};

/**
 * A licence parent's state as the acts before this one in its group left it
 * (ARMED: LIVE with an outstanding child, stored or issued by the group, whose
 * job a redeem of the group may since have bound).
 */
export async function licenseStateOf(state: ActState, keyId: string, licenseId: string): Promise<LicenseState> {
  const key = licenseKey(keyId, licenseId);
  const view = await state.row(LICENSE_VIEWS, key);
  if (view?.stored !== 'LIVE') return reportedLicenseState(view?.stored, false);
  let outstanding = view.outstanding;
  for (const job of (await state.row(GROUP_ISSUED_JOBS, key)) ?? []) {
    if (outstanding) break;
    outstanding = (await state.row(BOUND_JOBS, boundJobKey(keyId, job))) !== true;
  }
  return reportedLicenseState('LIVE', outstanding);
}

export interface LicenseSnapshot {
  object: 'license';
  license_id: string;
  state: LicenseState;
  charged: boolean;
  /** superseded: unredeemed tickets whose job another ticket bound (they can never redeem). */
  children: { issued: number; outstanding: number; redeemed: number; expired_unredeemed: number; superseded: number };
  history: Array<{ from: string; to: string; at: string; receipt_id: string }>;
  as_of: string;
}

export async function licenseSnapshot(db: Db, keyId: string, licenseId: string, now: string): Promise<LicenseSnapshot> {
  const stored = await storedLicenseState(db, keyId, licenseId);
  const counts = await db.execute({
    sql: `SELECT COUNT(*) AS issued,
                 COALESCE(SUM(CASE WHEN ${OUTSTANDING_CHILD} THEN 1 ELSE 0 END), 0) AS outstanding,
                 COALESCE(SUM(CASE WHEN redeemed_at IS NULL AND ${JOB_BOUND} THEN 1 ELSE 0 END), 0) AS superseded,
                 COALESCE(SUM(CASE WHEN redeemed_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS redeemed,
                 COALESCE(SUM(CASE WHEN redeemed_at IS NULL AND expires_at <= ? AND NOT ${JOB_BOUND} THEN 1 ELSE 0 END), 0) AS expired
          FROM pas_tickets WHERE key_id = ? AND license_id = ?`,
    args: [now, now, keyId, licenseId],
  });
  const c = counts.rows[0]!;
  const history = await db.execute({
    sql: 'SELECT from_state, to_state, at, receipt_id FROM pas_license_events WHERE key_id = ? AND license_id = ? ORDER BY seq',
    args: [keyId, licenseId],
  });
  const outstanding = Number(c.outstanding);
  return {
    object: 'license',
    license_id: licenseId,
    state: reportedLicenseState(stored, outstanding > 0),
    charged: stored !== undefined,
    children: {
      issued: Number(c.issued),
      outstanding,
      redeemed: Number(c.redeemed),
      expired_unredeemed: Number(c.expired),
      superseded: Number(c.superseded),
    },
    history: history.rows.map((r) => ({
      from: String(r.from_state),
      to: String(r.to_state),
      at: String(r.at),
      receipt_id: String(r.receipt_id),
    })),
    as_of: now,
  };
}

/**
 * Moves a parent to `to` when its stored state (undefined = never charged) is
 * one of `from`; records the transition. Returns the previous state, or null
 * when it did not move.
 */
export async function transitionLicense(
  tx: Transaction,
  t: { keyId: string; licenseId: string; from: readonly LicenseState[]; to: StoredLicenseState; receiptId: string; now: string },
): Promise<LicenseState | null> {
  const stored = await storedLicenseState(tx, t.keyId, t.licenseId);
  const current: LicenseState = stored ?? 'UNSIGNED';
  // ARMED is a reading of LIVE: a transition allowed from LIVE is allowed from ARMED.
  if (!t.from.includes(current)) return null;
  await tx.execute({
    sql: `INSERT INTO pas_licenses (key_id, license_id, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (key_id, license_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
    args: [t.keyId, t.licenseId, t.to, t.now, t.now],
  });
  await tx.execute({
    sql: 'INSERT INTO pas_license_events (key_id, license_id, from_state, to_state, receipt_id, at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [t.keyId, t.licenseId, current, t.to, t.receiptId, t.now],
  });
  return current;
}

export interface Ticket {
  id: string;
  key_id: string;
  license_id: string;
  job_id: string;
  fuse_id: string;
  spend_fingerprint: string;
  issued_at: string;
  expires_at: string;
  redeemed_at: string | null;
}

/**
 * A group's issued tickets, in one statement (a pre-bind's record, records.ts).
 * A redeem reads a ticket only by the id an answer gave, after its group committed.
 */
export async function insertTickets(tx: Transaction, tickets: ReadonlyArray<Omit<Ticket, 'redeemed_at'>>): Promise<void> {
  await insertRows(
    tx,
    'pas_tickets',
    ['id', 'key_id', 'license_id', 'job_id', 'fuse_id', 'spend_fingerprint', 'issued_at', 'expires_at'],
    tickets.map((t) => [t.id, t.key_id, t.license_id, t.job_id, t.fuse_id, t.spend_fingerprint, t.issued_at, t.expires_at]),
  );
}

/** A bind ticket a pre-bind issued. A redeem reads one only by the id the answer gave; the pre-binds after it in the group learn of it by `state.setRow` (GROUP_ISSUED_JOBS). Written with its group's records (records.ts). */
export const PAS_TICKETS: RecordWriter<Omit<Ticket, 'redeemed_at'>> = recordWriter('pas_tickets', insertTickets);

function rowToTicket(r: Row): Ticket {
  return {
    id: String(r.id),
    key_id: String(r.key_id),
    license_id: String(r.license_id),
    job_id: String(r.job_id),
    fuse_id: String(r.fuse_id),
    spend_fingerprint: String(r.spend_fingerprint),
    issued_at: String(r.issued_at),
    expires_at: String(r.expires_at),
    redeemed_at: r.redeemed_at == null ? null : String(r.redeemed_at),
  };
}

/**
 * Consumes a ticket and adds its job's spend leaf, exactly once: the UPDATE
 * claims only an unredeemed ticket and the leaf is UNIQUE per (key, job).
 * Returns false when another redeem won.
 */
export async function consumeTicket(tx: Transaction, t: Ticket, receiptId: string, now: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE pas_tickets SET redeemed_at = ?, redeem_receipt_id = ? WHERE id = ? AND redeemed_at IS NULL',
    args: [now, receiptId, t.id],
  });
  if (rs.rowsAffected !== 1) return false;
  const leaf = await tx.execute({
    sql: `INSERT INTO pas_spend_leaves (key_id, job_id, ticket_id, spend_fingerprint, redeemed_at) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (key_id, job_id) DO NOTHING`,
    args: [t.key_id, t.job_id, t.id, t.spend_fingerprint, now],
  });
  if (leaf.rowsAffected !== 1) throw new Error('job already bound'); // undone by the caller's retry
  return true;
}

/** What a redeem decides on: the ticket, its licence parent's stored state, and whether another ticket already bound its job. */
export interface RedeemView {
  ticket: Ticket;
  parent: StoredLicenseState | undefined;
  /** The ticket is unredeemed and its job's spend leaf exists (another ticket bound the job). */
  bound: boolean;
}

/**
 * The redeems of a group read together (ledger/acts.ts GroupReader): each
 * ticket with its parent's state and its job's binding, in one statement for
 * every ticket the group's redeems name, by ticket id. Whose ticket it is, the
 * redeem checks (`ticket.key_id`).
 */
export const REDEEM_VIEWS = {
  async read(db: Db, ids: readonly string[]): Promise<Map<string, RedeemView>> {
    const where = db.dialect.oneOf('t.id', ids);
    const rs = await db.execute({
      sql: `SELECT t.id, t.key_id, t.license_id, t.job_id, t.fuse_id, t.spend_fingerprint, t.issued_at, t.expires_at, t.redeemed_at,
                   l.state AS parent_state,
                   EXISTS (SELECT 1 FROM pas_spend_leaves s WHERE s.key_id = t.key_id AND s.job_id = t.job_id) AS job_bound
            FROM pas_tickets t LEFT JOIN pas_licenses l ON l.key_id = t.key_id AND l.license_id = t.license_id
            WHERE ${where.sql}`,
      args: where.args,
    });
    const views = new Map<string, RedeemView>();
    for (const r of rs.rows) {
      const ticket = rowToTicket(r);
      views.set(ticket.id, {
        ticket,
        parent: r.parent_state == null ? undefined : (String(r.parent_state) as StoredLicenseState),
        bound: ticket.redeemed_at === null && Number(r.job_bound) === 1,
      });
    }
    return views;
  },
};

/** The key of a job in BOUND_JOBS: its owner and its id. */
export const boundJobKey = (keyId: string, jobId: string): string => JSON.stringify([keyId, jobId]);

/**
 * Which of a group's jobs are bound (have a redeemed spend leaf), in one
 * statement (ledger/acts.ts GroupReader): a group of bind checks reads once. A
 * redeem in the group binds a job by a statement of its own, so the checks
 * after it read again (`state.row`).
 */
export const BOUND_JOBS = {
  async read(db: Db, keys: readonly string[]): Promise<Map<string, true>> {
    const j = db.dialect.tuples(
      'j',
      ['k', 'key_id', 'job_id'],
      keys.map((k) => [k, ...(JSON.parse(k) as [string, string])]),
    );
    const rs = await db.execute({
      sql: `SELECT DISTINCT j.k FROM ${j.sql} JOIN pas_spend_leaves s ON s.key_id = j.key_id AND s.job_id = j.job_id`,
      args: j.args,
    });
    return new Map(rs.rows.map((r) => [String(r.k), true as const]));
  },
};

/** A manual-underwriting issue a pre-bind raised (a HOLD): written with its group's records (records.ts), read by no act. */
export interface IssueRow {
  id: string;
  keyId: string;
  jobId: string;
  licenseId: string;
  fuseId: string;
  reason: string;
  receiptId: string;
  now: string;
  /** The review that answers it (docs/reviews.md): its decision is the underwriter's answer. */
  reviewId: string | null;
}

export async function insertIssues(tx: Transaction, issues: readonly IssueRow[]): Promise<void> {
  await insertRows(
    tx,
    'pas_issues',
    ['id', 'key_id', 'job_id', 'license_id', 'fuse_id', 'reason', 'receipt_id', 'created_at', 'review_id'],
    issues.map((i) => [i.id, i.keyId, i.jobId, i.licenseId, i.fuseId, i.reason, i.receiptId, i.now, i.reviewId]),
  );
}

/** A manual-underwriting issue a pre-bind raised (a HOLD); no act reads it. Written with its group's records (records.ts). */
export const PAS_ISSUES: RecordWriter<IssueRow> = recordWriter('pas_issues', insertIssues);

/** A receipt of a PAS act, listed under its job (an act's record: records.ts writes a group's together). */
export interface JobReceiptRow {
  keyId: string;
  jobId: string;
  /** A receipt minted by this group: its id carries its log index. */
  receiptId: string;
}

/**
 * One row per job and group: the group's receipts of that job as a list of
 * log indexes (index-lists.ts), not a row each. A job's receipts were rows of
 * their own, under a random key with an index beside them: a HALT replay
 * wrote about eight pages a group for them, and ran 7-39 % slower (measured
 * with no row at all).
 */
export async function insertJobReceipts(tx: Transaction, rows: readonly JobReceiptRow[]): Promise<void> {
  const entries = rows.map((r) => {
    const index = receiptLocation(r.receiptId)?.index;
    if (index === undefined) throw new Error(`receipt ${r.receiptId} carries no log index`);
    return { key: [r.keyId, r.jobId], index };
  });
  await insertRows(tx, 'pas_job_receipt_lists', ['key_id', 'job_id', 'first', 'offsets'], indexListRows(entries));
}

/** A PAS act's receipt listed under its job (read only outside the lock, by GET /v1/pas/bind-appendix). Written with its group's records (records.ts). */
export const PAS_JOB_RECEIPTS: RecordWriter<JobReceiptRow> = recordWriter('pas_job_receipt_lists', insertJobReceipts);

/** The receipts of a job, in log order, each as its log entry states it. */
export async function jobReceipts(
  db: Db,
  keyId: string,
  jobId: string,
): Promise<Array<{ receipt_id: string; kind: string; decision: string; created_at: string }>> {
  const rs = await db.execute({
    sql: 'SELECT first, offsets FROM pas_job_receipt_lists WHERE key_id = ? AND job_id = ?',
    args: [keyId, jobId],
  });
  const indexes = rs.rows.flatMap((r) => unpackIndexes(Number(r.first), Buffer.from(r.offsets as ArrayBuffer))).sort((a, b) => a - b);
  // A test owner's jobs list test receipts, entries of the test log (docs/test-mode.md).
  const log = receiptsLogOf(ownerParts(keyId).mode === 'test');
  return receiptsFromEntries(await readEntriesAt(db, log, indexes), log).map((r) => ({
    receipt_id: r.receipt_id,
    kind: r.payload.kind,
    decision: r.payload.decision,
    created_at: r.payload.issued_at,
  }));
}

export interface StoredGrant extends AuthorityGrant {
  id: string;
  key_id: string;
  name: string | null;
  max_premium_micros: number;
  created_at: string;
  revoked_at: string | null;
}

function rowToGrant(r: Record<string, unknown>): StoredGrant {
  return {
    id: String(r.id),
    key_id: String(r.key_id),
    name: r.name == null ? null : String(r.name),
    lines: JSON.parse(String(r.lines)) as string[],
    states: JSON.parse(String(r.states)) as string[],
    max_premium_micros: Number(r.max_premium_micros),
    created_at: String(r.created_at),
    revoked_at: r.revoked_at == null ? null : String(r.revoked_at),
  };
}

/**
 * A group's authority grants by id, in one statement (ledger/acts.ts
 * GroupReader): a group of authority checks reads its grants once, under the
 * lock, with no savepoint of its own. Whose grant it is, the check compares
 * (`key_id`); a revocation is a write of its own, so the group after it reads again.
 */
export const GRANTS: GroupReader<StoredGrant> = {
  async read(db, ids) {
    const where = db.dialect.oneOf('id', ids);
    const rs = await db.execute({ sql: `SELECT * FROM pas_authority_grants WHERE ${where.sql}`, args: where.args });
    return new Map(rs.rows.map((r) => [String(r.id), rowToGrant(r)]));
  },
};

export async function listGrants(db: Db, keyId: string): Promise<StoredGrant[]> {
  const rs = await db.execute({ sql: 'SELECT * FROM pas_authority_grants WHERE key_id = ? ORDER BY created_at, id', args: [keyId] });
  return rs.rows.map(rowToGrant);
}

export async function insertGrant(tx: Transaction, g: Omit<StoredGrant, 'revoked_at'>): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO pas_authority_grants (id, key_id, name, lines, states, max_premium_micros, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [g.id, g.key_id, g.name, JSON.stringify(g.lines), JSON.stringify(g.states), g.max_premium_micros, g.created_at],
  });
}

export async function revokeGrant(tx: Transaction, id: string, now: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE pas_authority_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL',
    args: [now, id],
  });
  return rs.rowsAffected === 1;
}

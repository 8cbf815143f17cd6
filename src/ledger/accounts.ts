/**
 * Accounts: an account owns its keys and everything they make (fuses, licence
 * parents, tickets, grants, triggers, webhooks; receipts through the key that
 * acted). `ownerId` is the one rule that says whose an object is: every route
 * stores and looks objects up under it, so the ownership model changes here.
 */
import type { Client, Transaction } from './sql.ts';
import { newId, nowIso } from '../ids.ts';
import { deleteMemberships, insertMember } from './members.ts';
import { scanKeyReceipts } from './key-receipts.ts';
import { getReceipt, receiptsLogOf, type StoredReceipt } from './receipts.ts';
import { getFuses, type Fuse } from './fuses.ts';
import { receiptAmountUsd, receiptReason } from '../domain/receipt-words.ts';

export interface Account {
  id: string;
  name: string;
  created_at: string;
}

/**
 * The owner id objects of this key are stored and found under: its account,
 * or for a test key its account's test side (`test:<account id>`, no row of
 * its own), so that a test key sees and changes test objects only and a live
 * key never sees them (docs/test-mode.md).
 */
export function ownerId(key: { account_id: string; mode?: 'live' | 'test' | undefined }): string {
  return key.mode === 'test' ? TEST_OWNER_PREFIX + key.account_id : key.account_id;
}

const TEST_OWNER_PREFIX = 'test:';

/** The owner of an account's live objects, or of its test objects. */
export const accountOwner = (accountId: string, test: boolean): string => (test ? TEST_OWNER_PREFIX + accountId : accountId);

/** The account and mode an owner id (ownerId) names. */
export function ownerParts(owner: string): { accountId: string; mode: 'live' | 'test' } {
  return owner.startsWith(TEST_OWNER_PREFIX)
    ? { accountId: owner.slice(TEST_OWNER_PREFIX.length), mode: 'test' }
    : { accountId: owner, mode: 'live' };
}

const PAYER_PREFIX = 'x402:';

/**
 * The account of a keyless x402 payer: the address that paid, on its network
 * (`x402:<network>:<address in lower case>`). It has no row in `accounts`; what
 * the payer makes is bound to the address that paid for it, as an account's
 * objects are to the account, so another payer cannot touch it.
 */
export function payerAccountId(network: string, address: string): string {
  return `${PAYER_PREFIX}${network}:${address.toLowerCase()}`;
}

/** Whether an owner id is a keyless payer's (payerAccountId) rather than an account's. */
export const isPayerAccount = (id: string): boolean => id.startsWith(PAYER_PREFIX);

/** A new account; `spendCapMicros` is its monthly spend cap (SPEND_CAP_ACCOUNT_DEFAULT_USD where a person signs up; null: none). */
export async function insertAccount(
  tx: Transaction,
  input: { id?: string; name: string; now?: string; spendCapMicros?: bigint | null },
): Promise<Account> {
  const account = { id: input.id ?? newId('acct'), name: input.name, created_at: input.now ?? nowIso() };
  await tx.execute({
    sql: 'INSERT INTO accounts (id, name, created_at, spend_cap_micros) VALUES (?, ?, ?, ?)',
    args: [account.id, account.name, account.created_at, input.spendCapMicros ?? null],
  });
  return account;
}

/** The account's monthly spend cap in micro-USD (null: none, or no such account). */
/** The account's name (what invitations and the members page call it), or undefined for no such account. */
export async function accountName(db: Client | Transaction, accountId: string): Promise<string | undefined> {
  const r = (await db.execute({ sql: 'SELECT name FROM accounts WHERE id = ?', args: [accountId] })).rows[0];
  return r ? String(r.name) : undefined;
}

export async function accountSpendCap(db: Client | Transaction, accountId: string): Promise<bigint | null> {
  const rs = await db.execute({ sql: 'SELECT spend_cap_micros FROM accounts WHERE id = ?', args: [accountId] });
  const v = rs.rows[0]?.spend_cap_micros;
  return v == null ? null : BigInt(String(v));
}

/** Sets the account's monthly spend cap (null: none); false when there is no such account. */
export async function setAccountSpendCap(tx: Transaction, accountId: string, capMicros: bigint | null): Promise<boolean> {
  const rs = await tx.execute({ sql: 'UPDATE accounts SET spend_cap_micros = ? WHERE id = ?', args: [capMicros, accountId] });
  return rs.rowsAffected > 0;
}

/** The owner (ownerId) of a key's objects (undefined for no such key): decides whose a receipt is. */
export async function accountOfKey(db: Client | Transaction, keyId: string): Promise<string | undefined> {
  const r = (await db.execute({ sql: 'SELECT account_id, mode FROM api_keys WHERE id = ?', args: [keyId] })).rows[0];
  return r ? ownerId({ account_id: String(r.account_id), mode: String(r.mode) as 'live' | 'test' }) : undefined;
}

/** Whether a receipt made by key `receiptKeyId` belongs to the caller's account. */
export async function receiptVisibleTo(
  db: Client | Transaction,
  receiptKeyId: string | undefined,
  caller: { account_id: string; mode?: 'live' | 'test' | undefined },
): Promise<boolean> {
  return receiptKeyId !== undefined && (await accountOfKey(db, receiptKeyId)) === ownerId(caller);
}

// ---------------------------------------------------------------- site logins and sessions

export interface Login {
  account_id: string;
  email: string;
  password_hash: string;
  dashboard_key_id: string;
}

/** A person's sign-in, for the account they sign up with: they are its first owner (ledger/members.ts). */
export async function insertLogin(tx: Transaction, l: Login & { now: string }): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO account_logins (account_id, email, password_hash, dashboard_key_id, created_at) VALUES (?, ?, ?, ?, ?)',
    args: [l.account_id, l.email, l.password_hash, l.dashboard_key_id, l.now],
  });
  await insertMember(tx, { accountId: l.account_id, personId: l.account_id, role: 'owner', now: l.now });
}

const rowToLogin = (r: Record<string, unknown>): Login => ({
  account_id: String(r.account_id),
  email: String(r.email),
  password_hash: String(r.password_hash),
  dashboard_key_id: String(r.dashboard_key_id),
});

export async function loginByEmail(db: Client | Transaction, email: string): Promise<Login | undefined> {
  const r = (await db.execute({ sql: 'SELECT * FROM account_logins WHERE email = ?', args: [email] })).rows[0];
  return r ? rowToLogin(r) : undefined;
}

export async function loginOfAccount(db: Client | Transaction, accountId: string): Promise<Login | undefined> {
  const r = (await db.execute({ sql: 'SELECT * FROM account_logins WHERE account_id = ?', args: [accountId] })).rows[0];
  return r ? rowToLogin(r) : undefined;
}

/** Sets the password; every reset link of the account still outstanding is void from then on. */
export async function setPassword(tx: Transaction, accountId: string, passwordHash: string): Promise<void> {
  await tx.execute({ sql: 'UPDATE account_logins SET password_hash = ? WHERE account_id = ?', args: [passwordHash, accountId] });
  await voidPasswordResets(tx, accountId);
}

export async function insertSession(
  tx: Transaction,
  s: { secretHash: string; accountId: string; now: string; expiresAt: string; userAgent?: string | undefined },
): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO sessions (secret_hash, account_id, created_at, expires_at, user_agent) VALUES (?, ?, ?, ?, ?)',
    args: [s.secretHash, s.accountId, s.now, s.expiresAt, s.userAgent?.slice(0, 300) ?? null],
  });
}

export interface SessionRow {
  /** SHA-256 of the session secret (base64url): never the secret. */
  secret_hash: string;
  created_at: string;
  expires_at: string;
  user_agent: string | null;
}

/** The account's live sessions, newest first. */
export async function sessionsOf(db: Client | Transaction, accountId: string, now: string): Promise<SessionRow[]> {
  const rs = await db.execute({
    sql: 'SELECT secret_hash, created_at, expires_at, user_agent FROM sessions WHERE account_id = ? AND expires_at > ? ORDER BY created_at DESC',
    args: [accountId, now],
  });
  return rs.rows.map((r) => ({
    secret_hash: String(r.secret_hash),
    created_at: String(r.created_at),
    expires_at: String(r.expires_at),
    user_agent: r.user_agent == null ? null : String(r.user_agent),
  }));
}

/** Ends one session of the account, named by its hash; false when it is not the account's. */
export async function deleteSessionOf(tx: Transaction, accountId: string, secretHash: string): Promise<boolean> {
  return (
    (await tx.execute({ sql: 'DELETE FROM sessions WHERE account_id = ? AND secret_hash = ?', args: [accountId, secretHash] }))
      .rowsAffected === 1
  );
}

/** Ends every session of the account but one (after a password change, the person stays signed in here). */
export async function deleteOtherSessions(tx: Transaction, accountId: string, keepHash: string): Promise<number> {
  return (await tx.execute({ sql: 'DELETE FROM sessions WHERE account_id = ? AND secret_hash <> ?', args: [accountId, keepHash] }))
    .rowsAffected;
}

/**
 * Changes the sign-in email; false when another account signs in with it. Every reset link of the
 * account still outstanding is void from then on: it went to the old address.
 */
export async function setEmail(tx: Transaction, accountId: string, email: string): Promise<boolean> {
  if ((await tx.execute({ sql: 'SELECT 1 FROM account_logins WHERE email = ? AND account_id <> ?', args: [email, accountId] })).rows.length)
    return false;
  await tx.execute({ sql: 'UPDATE account_logins SET email = ? WHERE account_id = ?', args: [email, accountId] });
  await voidPasswordResets(tx, accountId);
  return true;
}

/**
 * Deletes what lets a person into the account: its login, sessions, passkeys
 * and reset links, its people and theirs elsewhere (ledger/members.ts), and marks it deleted. Its keys are revoked by the caller in
 * the same transaction; its receipts stay in the public log untouched.
 */
export async function deleteAccountAccess(tx: Transaction, accountId: string, now: string): Promise<void> {
  for (const table of ['sessions', 'passkeys', 'password_resets', 'webauthn_challenges', 'account_logins']) {
    await tx.execute({ sql: `DELETE FROM ${table} WHERE account_id = ?`, args: [accountId] });
  }
  await deleteMemberships(tx, accountId);
  await tx.execute({ sql: 'UPDATE accounts SET deleted_at = COALESCE(deleted_at, ?) WHERE id = ?', args: [now, accountId] });
}

export async function deleteSession(tx: Transaction, secretHash: string): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM sessions WHERE secret_hash = ?', args: [secretHash] });
}

/** Signs the account out everywhere: every session ends. */
export async function deleteSessionsOf(tx: Transaction, accountId: string): Promise<number> {
  return (await tx.execute({ sql: 'DELETE FROM sessions WHERE account_id = ?', args: [accountId] })).rowsAffected;
}

export async function insertPasswordReset(tx: Transaction, r: { tokenHash: string; accountId: string; expiresAt: string }): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO password_resets (token_hash, account_id, expires_at) VALUES (?, ?, ?)',
    args: [r.tokenHash, r.accountId, r.expiresAt],
  });
}

/**
 * Voids every reset link of the account not used yet. A link is a way in for an hour: a password
 * or email change, or another link used, must close every other one.
 */
async function voidPasswordResets(tx: Transaction, accountId: string): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM password_resets WHERE account_id = ? AND used_at IS NULL', args: [accountId] });
}

/**
 * Uses a reset token once: the account it resets, or undefined when unknown, used or expired.
 * Setting the password with it (setPassword) voids the account's other links.
 */
export async function consumePasswordReset(tx: Transaction, tokenHash: string, now: string): Promise<string | undefined> {
  const r = (
    await tx.execute({
      sql: 'UPDATE password_resets SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING account_id',
      args: [now, tokenHash, now],
    })
  ).rows[0];
  return r ? String(r.account_id) : undefined;
}

export async function passwordResetValid(db: Client | Transaction, tokenHash: string, now: string): Promise<boolean> {
  const r = (
    await db.execute({
      sql: 'SELECT 1 FROM password_resets WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?',
      args: [tokenHash, now],
    })
  ).rows[0];
  return r !== undefined;
}

// ---------------------------------------------------------------- what the dashboard reads

export interface SkuTotal {
  sku: string;
  count: number;
  micros: number;
}

/** The ids of the account's keys (revoked ones included: their charges and receipts stay the account's). */
/** The account's keys, revoked ones included, id to name, oldest first. */
export async function accountKeyNames(db: Client, owner: string): Promise<Map<string, string>> {
  const { accountId, mode } = ownerParts(owner);
  const rs = await db.execute({
    sql: 'SELECT id, name FROM api_keys WHERE account_id = ? AND mode = ? ORDER BY created_at, id',
    args: [accountId, mode],
  });
  return new Map(rs.rows.map((r) => [String(r.id), String(r.name)]));
}

/** Charges of every key of the account since `since` (a UTC day is counted whole), per SKU, from the usage counters. */
export async function accountChargesBySku(db: Client, accountId: string, since: string): Promise<SkuTotal[]> {
  const rs = await db.execute({
    sql: `SELECT c.sku AS sku, SUM(c.count) AS n, SUM(c.usd) * 1000000 + SUM(c.micros) AS micros FROM usage_counters c JOIN api_keys k ON k.id = c.key_id
          WHERE k.account_id = ? AND c.day >= ? GROUP BY c.sku ORDER BY c.sku`,
    args: [accountId, since.slice(0, 10)],
  });
  return rs.rows.map((r) => ({ sku: String(r.sku), count: Number(r.n), micros: Number(r.micros) }));
}

/** Charges of the account per UTC day and SKU since `since` (days without charges are absent), by day then SKU. */
export async function accountChargesByDay(
  db: Client,
  accountId: string,
  since: string,
): Promise<Array<{ day: string; sku: string; count: number; micros: number }>> {
  const rs = await db.execute({
    sql: `SELECT c.day AS day, c.sku AS sku, SUM(c.count) AS n, SUM(c.usd) * 1000000 + SUM(c.micros) AS micros FROM usage_counters c JOIN api_keys k ON k.id = c.key_id
          WHERE k.account_id = ? AND c.day >= ? GROUP BY c.day, c.sku ORDER BY c.day, c.sku`,
    args: [accountId, since.slice(0, 10)],
  });
  return rs.rows.map((r) => ({ day: String(r.day), sku: String(r.sku), count: Number(r.n), micros: Number(r.micros) }));
}

export interface ReceiptRow {
  id: string;
  kind: string;
  decision: string;
  subject: string | null;
  key_id: string;
  /** The agent's tool the act gated (a proxied MCP call, a guarded SDK tool), when it named one. */
  tool: string | null;
  created_at: string;
  /** The key's name at reading time ("" when the key is gone). */
  key_name: string;
  /** The label of the fuse the receipt is about, when its subject is one of the account's fuses that has a label. */
  fuse_label: string | null;
  /** Why it was decided so (receiptReason), or null when the receipt does not say. */
  reason: string | null;
  /** What the act charged its key, a decimal USD string. */
  amount_usd: string;
}

export interface ReceiptFilter {
  /** Exact kind or decision, in any case ("deny" finds DENY). */
  kind?: string | undefined;
  decision?: string | undefined;
  /** Any of these decisions, exactly (the "refusals" choice). */
  decisions?: readonly string[] | undefined;
  /** A kind prefix, such as "fuse_" for every fuse change. */
  kindPrefix?: string | undefined;
  /** Prefixes, in any case, of the subject (e.g. a fuse id), the key id and the receipt id. */
  subject?: string | undefined;
  key?: string | undefined;
  id?: string | undefined;
  /** Exact tool name, in any case: the agent's tool a hop or evaluate gated (`data.tool`). */
  tool?: string | undefined;
  /** Issued at or after `from`, and before `to` (RFC 3339 or YYYY-MM-DD, UTC). */
  from?: string | undefined;
  to?: string | undefined;
  /** The cursor: only receipts older than this receipt id (the last one of the previous page). */
  before?: string | undefined;
  /** The other cursor: only receipts newer than this receipt id (the first one of the next page). */
  after?: string | undefined;
  limit: number;
}

/** How many receipts one page may examine, kept or not: a rare filter pages on instead of scanning a whole history. */
export const RECEIPT_SCAN_BUDGET = 5_000;

/**
 * The account's receipts (made by any of its keys), newest first, filtered;
 * page on with `before`. With `after`, the receipts newer than it, still
 * newest first: the page just above the cursor is the tail. Read from the log through the keys' receipt lists
 * (ledger/key-receipts.ts): no row per receipt exists to search.
 */
export async function accountReceipts(db: Client, owner: string, filter: ReceiptFilter): Promise<ReceiptRow[]> {
  const scan = await scanAccountReceipts(db, owner, filter, filter.limit);
  if (!scan) return [];
  const { receipts, names } = scan;
  const fuses = await getFuses(
    db,
    receipts.flatMap((r) => (r.payload.subject?.startsWith('fuse_') ? [r.payload.subject] : [])),
  );
  return receipts.map((r) => ({
    id: r.receipt_id,
    kind: r.payload.kind,
    decision: r.payload.decision,
    subject: r.payload.subject ?? null,
    key_id: r.payload.key_id ?? '',
    tool: toolOf(r.payload) ?? null,
    created_at: r.payload.issued_at,
    key_name: names.get(r.payload.key_id ?? '') ?? '',
    fuse_label: fuseLabel(fuses.get(r.payload.subject ?? ''), owner),
    reason: receiptReason(r.payload),
    amount_usd: receiptAmountUsd(r.payload),
  }));
}

/** A fuse's label, shown only when the owner (an account, or its test side) owns the fuse (ownerId). */
const fuseLabel = (f: Fuse | undefined, owner: string): string | null => (f && f.key_id === owner ? f.label : null);

/**
 * How many of the account's receipts match `filter` (cursors and limit aside),
 * counted up to RECEIPT_SCAN_BUDGET examined; `more` says the count stopped there.
 */
export async function countAccountReceipts(db: Client, owner: string, filter: ReceiptFilter): Promise<{ count: number; more: boolean }> {
  const scan = await scanAccountReceipts(db, owner, { ...filter, before: undefined, after: undefined }, RECEIPT_SCAN_BUDGET);
  return scan ? { count: scan.receipts.length, more: scan.next !== undefined } : { count: 0, more: false };
}

/**
 * The scan both read: the owner's keys (an account's live keys, or its test
 * side's test keys, whose receipts are of the test log), the filter as a
 * predicate, the cursors as log indexes (null: a cursor names no receipt of that log).
 */
async function scanAccountReceipts(db: Client, owner: string, filter: ReceiptFilter, limit: number) {
  const lower = (v: string | undefined) => v?.toLowerCase();
  const [kind, decision, subject, keyPrefix, id, tool] = [
    filter.kind,
    filter.decision,
    filter.subject,
    filter.key,
    filter.id,
    filter.tool,
  ].map(lower);
  const names = await accountKeyNames(db, owner);
  const log = receiptsLogOf(ownerParts(owner).mode === 'test');
  const keys = [...names.keys()].filter((k) => !keyPrefix || k.toLowerCase().startsWith(keyPrefix));
  const keep = (r: StoredReceipt) => {
    const p = r.payload;
    return (
      (!kind || p.kind.toLowerCase() === kind) &&
      (!decision || p.decision.toLowerCase() === decision) &&
      (!filter.decisions || filter.decisions.includes(p.decision)) &&
      (!filter.kindPrefix || p.kind.startsWith(filter.kindPrefix)) &&
      (!subject || (p.subject ?? '').toLowerCase().startsWith(subject)) &&
      (!id || r.receipt_id.toLowerCase().startsWith(id)) &&
      (!tool || toolOf(p)?.toLowerCase() === tool) &&
      (!filter.from || p.issued_at >= filter.from) &&
      (!filter.to || p.issued_at < filter.to)
    );
  };
  const indexOf = async (cursor: string | undefined) => {
    if (!cursor) return undefined;
    const r = await getReceipt(db, cursor);
    return r && r.log === log ? r.log_index : null;
  };
  const [before, after] = [await indexOf(filter.before), await indexOf(filter.after)];
  if (before === null || after === null) return undefined;
  const scan = await scanKeyReceipts(db, keys, { limit, keep, before, after, budget: RECEIPT_SCAN_BUDGET, log });
  return { ...scan, names };
}

const toolOf = (p: StoredReceipt['payload']): string | undefined => (typeof p.data?.tool === 'string' ? p.data.tool : undefined);

// ---------------------------------------------------------------- passkeys

export interface Passkey {
  credential_id: string;
  account_id: string;
  /** base64url of the COSE public key. */
  public_key: string;
  counter: number;
  transports: string[];
  /** What the person called it (null: unnamed, from before passkeys had names). */
  name: string | null;
  created_at: string;
  last_used_at: string | null;
}

const rowToPasskey = (r: Record<string, unknown>): Passkey => ({
  credential_id: String(r.credential_id),
  account_id: String(r.account_id),
  public_key: String(r.public_key),
  counter: Number(r.counter),
  transports: r.transports ? (JSON.parse(String(r.transports)) as string[]) : [],
  name: r.name == null ? null : String(r.name),
  created_at: String(r.created_at),
  last_used_at: r.last_used_at == null ? null : String(r.last_used_at),
});

export async function insertPasskey(tx: Transaction, p: Omit<Passkey, 'last_used_at'>): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO passkeys (credential_id, account_id, public_key, counter, transports, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [p.credential_id, p.account_id, p.public_key, p.counter, JSON.stringify(p.transports), p.name, p.created_at],
  });
}

/** Renames one of the account's passkeys; false when it is not the account's. */
export async function renamePasskey(tx: Transaction, accountId: string, credentialId: string, name: string): Promise<boolean> {
  return (
    (
      await tx.execute({
        sql: 'UPDATE passkeys SET name = ? WHERE account_id = ? AND credential_id = ?',
        args: [name, accountId, credentialId],
      })
    ).rowsAffected === 1
  );
}

/** Removes one of the account's passkeys: it can no longer sign in. False when it is not the account's. */
export async function deletePasskey(tx: Transaction, accountId: string, credentialId: string): Promise<boolean> {
  return (
    (await tx.execute({ sql: 'DELETE FROM passkeys WHERE account_id = ? AND credential_id = ?', args: [accountId, credentialId] }))
      .rowsAffected === 1
  );
}

export async function getPasskey(db: Client | Transaction, credentialId: string): Promise<Passkey | undefined> {
  const r = (await db.execute({ sql: 'SELECT * FROM passkeys WHERE credential_id = ?', args: [credentialId] })).rows[0];
  return r ? rowToPasskey(r) : undefined;
}

export async function passkeysOf(db: Client | Transaction, accountId: string): Promise<Passkey[]> {
  return (await db.execute({ sql: 'SELECT * FROM passkeys WHERE account_id = ? ORDER BY created_at', args: [accountId] })).rows.map(
    rowToPasskey,
  );
}

export async function passkeyUsed(tx: Transaction, credentialId: string, counter: number, now: string): Promise<void> {
  await tx.execute({
    sql: 'UPDATE passkeys SET counter = ?, last_used_at = ? WHERE credential_id = ?',
    args: [counter, now, credentialId],
  });
}

export async function insertChallenge(
  tx: Transaction,
  c: { challenge: string; kind: 'register' | 'signin'; accountId: string | null; expiresAt: string },
): Promise<void> {
  await tx.execute({ sql: 'DELETE FROM webauthn_challenges WHERE expires_at < ?', args: [new Date().toISOString()] });
  await tx.execute({
    sql: 'INSERT INTO webauthn_challenges (challenge, kind, account_id, expires_at) VALUES (?, ?, ?, ?)',
    args: [c.challenge, c.kind, c.accountId, c.expiresAt],
  });
}

/** Uses a challenge once: true when it was issued for this ceremony (and account), unexpired. */
export async function consumeChallenge(
  tx: Transaction,
  challenge: string,
  kind: 'register' | 'signin',
  accountId: string | null,
  now: string,
): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'DELETE FROM webauthn_challenges WHERE challenge = ? AND kind = ? AND account_id IS ? AND expires_at > ?',
    args: [challenge, kind, accountId, now],
  });
  return rs.rowsAffected > 0;
}

/**
 * API keys. A key is `fg_live_` (or, in test mode, `fg_test_`) + 256 random
 * bits, shown once; the database keeps its SHA-256 only. Authentication looks
 * the hash up, which compares no secret byte by byte.
 */
import { hash, randomBytes } from 'node:crypto';
import type { Client, Fragment, Transaction } from './sql.ts';
import { newId, nowIso } from '../ids.ts';
import type { HopPeriod } from '../domain/quota.ts';
import { hopsThisPeriod } from './hop-counters.ts';
import { insertAccount } from './accounts.ts';
import type { Ledger } from './ledger.ts';
import { cachedKey, invalidateKeyCache, peekKey } from './key-cache.ts';

export const KEY_PREFIX = 'fg_live_';

/**
 * A live key's acts are billed and logged in the receipts log; a test key's are
 * decided the same way, logged in the test log and billed nothing
 * (docs/test-mode.md). A key keeps its mode for life, through rotations.
 */
export const KEY_MODES = ['live', 'test'] as const;
export type KeyMode = (typeof KEY_MODES)[number];
const PREFIXES: Record<KeyMode, string> = { live: KEY_PREFIX, test: 'fg_test_' };

/** `agent` keys act (and may blow a fuse); `operator` keys also manage, and alone revive. */
export const KEY_ROLES = ['agent', 'operator'] as const;
export type KeyRole = (typeof KEY_ROLES)[number];

export interface ApiKey {
  id: string;
  /** The owning account: see `ownerId` in accounts.ts. */
  account_id: string;
  name: string;
  role: KeyRole;
  /** Absent (older callers' objects) reads as live. */
  mode?: KeyMode | undefined;
  prefix: string;
  hop_limit: number;
  /** Hops used in the current period (0 when the stored count is of an earlier period). */
  hops_used: number;
  /** The period the hop limit counts over; it starts again at each UTC period start. */
  hop_period: HopPeriod;
  created_at: string;
  revoked_at: string | null;
  /** After this time the key answers 401 (null: it does not expire). */
  expires_at: string | null;
  /** Written at most once a minute per key (see touchKey), so it is approximate by that much. */
  last_used_at: string | null;
  rotated_at: string | null;
  /** Until when the secret before the last rotation still works (null: none). */
  previous_expires_at: string | null;
  /** The declared act surface (`keys surface`), or undefined for the default: every preset. */
  surface?: string[] | undefined;
  /** How long a review a HOLD of this key opens waits (seconds); null or absent: REVIEW_TTL_SECONDS (docs/reviews.md). */
  review_ttl_seconds?: number | null | undefined;
  /** The most this key may be charged per UTC month, micro-USD (null or absent: no cap; spend-caps.ts). */
  spend_cap_micros?: bigint | null | undefined;
}

export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

function rowToKey(r: Record<string, unknown>): ApiKey {
  return {
    id: String(r.id),
    account_id: String(r.account_id),
    name: String(r.name),
    role: String(r.role) as KeyRole,
    mode: String(r.mode) as KeyMode,
    prefix: String(r.prefix),
    hop_limit: Number(r.hop_limit),
    hops_used: Number(r.hops_used),
    hop_period: String(r.hop_period) as HopPeriod,
    created_at: String(r.created_at),
    revoked_at: r.revoked_at == null ? null : String(r.revoked_at),
    expires_at: r.expires_at == null ? null : String(r.expires_at),
    last_used_at: r.last_used_at == null ? null : String(r.last_used_at),
    rotated_at: r.rotated_at == null ? null : String(r.rotated_at),
    previous_expires_at: r.previous_expires_at == null ? null : String(r.previous_expires_at),
    surface: r.surface == null ? undefined : (JSON.parse(String(r.surface)) as string[]),
    review_ttl_seconds: r.review_ttl_seconds == null ? null : Number(r.review_ttl_seconds),
    spend_cap_micros: r.spend_cap_micros == null ? null : BigInt(String(r.spend_cap_micros)),
  };
}

/** The columns of a key row (hops_used counted now), and the arguments they take: put first in a statement's arguments. */
function keyColumns(now = new Date()): Fragment {
  const hops = hopsThisPeriod(now);
  return {
    sql: `id, account_id, name, role, mode, prefix, hop_limit, ${hops.sql} AS hops_used, hop_period, created_at, revoked_at, surface, expires_at, last_used_at, rotated_at, previous_expires_at, review_ttl_seconds, spend_cap_micros`,
    args: hops.args,
  };
}

export async function createApiKey(
  ledger: Ledger,
  /** Without `accountId` the key gets an account of its own, whose id is the key's id. */
  input: {
    name: string;
    hopLimit: number;
    role?: KeyRole;
    /** Default live. */
    mode?: KeyMode;
    accountId?: string;
    expiresAt?: string | null;
    hopPeriod?: HopPeriod;
    reviewTtlSeconds?: number | null;
    spendCapMicros?: bigint | null;
    /** The spend cap of the account made for the key when there is no `accountId` (SPEND_CAP_ACCOUNT_DEFAULT_USD). */
    accountSpendCapMicros?: bigint | null;
  },
): Promise<{ key: ApiKey; secret: string }> {
  const mode = input.mode ?? 'live';
  const secret = newSecret(mode);
  const key: ApiKey = {
    id: newId('key'),
    account_id: input.accountId ?? '',
    name: input.name,
    role: input.role ?? 'operator',
    mode,
    prefix: prefixOf(secret),
    hop_limit: input.hopLimit,
    hops_used: 0,
    hop_period: input.hopPeriod ?? 'month',
    created_at: nowIso(),
    revoked_at: null,
    expires_at: input.expiresAt ?? null,
    last_used_at: null,
    rotated_at: null,
    previous_expires_at: null,
    review_ttl_seconds: input.reviewTtlSeconds ?? null,
    spend_cap_micros: input.spendCapMicros ?? null,
  };
  await ledger.write(async (tx) => {
    // A key made on its own gets an account of its own under the key's id, as the
    // 0141 migration did for every older key: objects stored under the key id stay its.
    if (!input.accountId)
      key.account_id = (
        await insertAccount(tx, { id: key.id, name: key.name, now: key.created_at, spendCapMicros: input.accountSpendCapMicros ?? null })
      ).id;
    await tx.execute({
      sql: 'INSERT INTO api_keys (id, account_id, name, role, mode, secret_hash, prefix, hop_limit, hop_period, created_at, expires_at, review_ttl_seconds, spend_cap_micros) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      args: [
        key.id,
        key.account_id,
        key.name,
        key.role,
        mode,
        hashSecret(secret),
        key.prefix,
        key.hop_limit,
        key.hop_period,
        key.created_at,
        key.expires_at,
        key.review_ttl_seconds ?? null,
        key.spend_cap_micros ?? null,
      ],
    });
  });
  invalidateKeyCache(ledger.read);
  return { key, secret };
}

const newSecret = (mode: KeyMode) => PREFIXES[mode] + randomBytes(32).toString('base64url');
const prefixOf = (secret: string) => secret.slice(0, KEY_PREFIX.length + 4);

/** Whether the key acts in test mode (its receipts in the test log, billed nothing). */
export const isTestKey = (key: { mode?: KeyMode | undefined }): boolean => key.mode === 'test';

/** The key whose current secret, or previous secret still in its rotation grace, this is. */
export function findKeyBySecret(db: Client, secret: string, now = nowIso()): Promise<ApiKey | undefined> {
  return findKeyByHash(db, hashSecret(secret), now);
}

/**
 * findKeyBySecret through the authentication cache (key-cache.ts): an answer is
 * reused for at most `ttlMs` (AUTH_CACHE_MS) as `nowMs` counts it, so a change
 * made by another process is seen within that bound; changes made here drop the
 * cache at once.
 */
export function authenticateSecret(db: Client, secret: string, ttlMs: number, nowMs = Date.now()): Promise<ApiKey | undefined> {
  return cachedKey(db, hashSecret(secret), ttlMs, (hash) => findKeyByHash(db, hash), nowMs);
}

/** authenticateSecret's answer when the cache holds a fresh one at `nowMs` (never queries), else undefined. */
export function cachedSecret(db: Client, secret: string, nowMs = Date.now()): { key: ApiKey | undefined } | undefined {
  return peekKey(db, hashSecret(secret), nowMs);
}

async function findKeyByHash(db: Client, hash: string, now = nowIso()): Promise<ApiKey | undefined> {
  const columns = keyColumns(new Date(now));
  const rs = await db.execute({
    sql: `SELECT ${columns.sql} FROM api_keys WHERE secret_hash = ?
          UNION ALL SELECT ${columns.sql} FROM api_keys WHERE previous_secret_hash = ? AND previous_expires_at > ?`,
    args: [...columns.args, hash, ...columns.args, hash, now],
  });
  return rs.rows[0] ? rowToKey(rs.rows[0]) : undefined;
}

/**
 * Gives a key a new secret; the old one keeps working for `graceSeconds` (0: it
 * stops at once). Returns the new secret, or undefined when the key is unknown
 * or revoked.
 */
export async function rotateApiKey(ledger: Ledger, id: string, graceSeconds: number): Promise<{ key: ApiKey; secret: string } | undefined> {
  const current = await getApiKey(ledger.read, id);
  if (!current) return undefined;
  const secret = newSecret(current.mode ?? 'live');
  const now = new Date();
  const graceUntil = nowIso(new Date(now.getTime() + graceSeconds * 1000));
  const rs = await ledger.write((tx) =>
    tx.execute({
      sql: `UPDATE api_keys SET previous_secret_hash = secret_hash, previous_expires_at = ?, secret_hash = ?, prefix = ?, rotated_at = ?
            WHERE id = ? AND revoked_at IS NULL`,
      args: [graceUntil, hashSecret(secret), prefixOf(secret), nowIso(now), id],
    }),
  );
  invalidateKeyCache(ledger.read);
  if (rs.rowsAffected === 0) return undefined;
  const key = await getApiKey(ledger.read, id);
  return key ? { key, secret } : undefined;
}

/** Whether the key is past its expiry at `now`. */
export const isExpired = (key: Pick<ApiKey, 'expires_at'>, now = nowIso()): boolean => key.expires_at !== null && key.expires_at <= now;

/** How stale last_used_at may get: one write per key per this many ms, not one per request. */
export const LAST_USED_RESOLUTION_MS = 60_000;
/** Per key, the newest last_used_at this process knows of (its own write, or a stored one it read), in ms. */
const touched = new Map<string, number>();

/**
 * Records that a key was used, cheaply: skipped while the stored time (or this
 * process's last write) is younger than LAST_USED_RESOLUTION_MS, written off the
 * request path otherwise. A lost write only makes last_used_at a minute staler.
 * The time known here is checked first: most requests parse no date.
 */
export function touchKey(ledger: Ledger, key: Pick<ApiKey, 'id' | 'last_used_at'>, nowMs = Date.now()): void {
  const known = touched.get(key.id) ?? 0;
  if (nowMs - known < LAST_USED_RESOLUTION_MS) return;
  const stored = key.last_used_at ? Date.parse(key.last_used_at) : 0;
  const newest = Math.max(known, stored);
  const fresh = nowMs - newest < LAST_USED_RESOLUTION_MS;
  if (touched.size >= 100_000) touched.clear();
  touched.set(key.id, fresh ? newest : nowMs);
  if (fresh) return;
  const at = nowIso(new Date(nowMs));
  ledger
    .write((tx) =>
      tx.execute({
        sql: 'UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
        args: [at, key.id, at],
      }),
    )
    .catch(() => touched.delete(key.id));
}

export async function getApiKey(db: Client | Transaction, id: string): Promise<ApiKey | undefined> {
  const columns = keyColumns();
  const rs = await db.execute({ sql: `SELECT ${columns.sql} FROM api_keys WHERE id = ?`, args: [...columns.args, id] });
  return rs.rows[0] ? rowToKey(rs.rows[0]) : undefined;
}

/** Every key (oldest first). */
export async function listApiKeys(db: Client): Promise<ApiKey[]> {
  const columns = keyColumns();
  const rs = await db.execute({ sql: `SELECT ${columns.sql} FROM api_keys ORDER BY created_at, id`, args: columns.args });
  return rs.rows.map(rowToKey);
}

/** One page of an account's keys (of one mode when `mode` is given), oldest first: at most `limit`, those after the key `after` in that order. */
export async function accountKeysPage(db: Client, accountId: string, limit: number, after?: ApiKey, mode?: KeyMode): Promise<ApiKey[]> {
  const columns = keyColumns();
  const ofMode = mode ? { sql: ' AND mode = ?', args: [mode] } : { sql: '', args: [] };
  const rs = await db.execute(
    after
      ? {
          sql: `SELECT ${columns.sql} FROM api_keys WHERE account_id = ?${ofMode.sql} AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
          args: [...columns.args, accountId, ...ofMode.args, after.created_at, after.id, limit],
        }
      : {
          sql: `SELECT ${columns.sql} FROM api_keys WHERE account_id = ?${ofMode.sql} ORDER BY created_at, id LIMIT ?`,
          args: [...columns.args, accountId, ...ofMode.args, limit],
        },
  );
  return rs.rows.map(rowToKey);
}

/** Revokes a key; returns false when no such key exists. Revoking twice keeps the first time. */
export async function revokeApiKey(ledger: Ledger, id: string): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?', args: [nowIso(), id] }),
  );
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

/**
 * Sets a key's hop limit (and, when given, the period it counts over). Hops
 * are counted per day, so a new period counts the hops already made in it:
 * moving from 'month' to 'day' leaves today's hops counted.
 */
export async function setHopLimit(ledger: Ledger, id: string, hopLimit: number, hopPeriod?: HopPeriod): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    hopPeriod === undefined
      ? tx.execute({ sql: 'UPDATE api_keys SET hop_limit = ? WHERE id = ?', args: [hopLimit, id] })
      : tx.execute({ sql: 'UPDATE api_keys SET hop_limit = ?, hop_period = ? WHERE id = ?', args: [hopLimit, hopPeriod, id] }),
  );
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

/** Revokes every key of an account inside the caller's transaction (an account being deleted); call `keysChanged` after it commits. */
export async function revokeAccountKeys(tx: Transaction, accountId: string, now: string): Promise<number> {
  return (
    await tx.execute({ sql: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE account_id = ?', args: [now, accountId] })
  ).rowsAffected;
}

/** Drops this process's cached keys after keys changed in a transaction of the caller's. */
export const keysChanged = (ledger: Ledger) => invalidateKeyCache(ledger.read);

/** Sets when a key stops working (null: never); returns false when no such key exists. */
export async function setKeyExpiry(ledger: Ledger, id: string, expiresAt: string | null): Promise<boolean> {
  const rs = await ledger.write((tx) => tx.execute({ sql: 'UPDATE api_keys SET expires_at = ? WHERE id = ?', args: [expiresAt, id] }));
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

/** Sets how long a review a HOLD of this key opens waits (null: REVIEW_TTL_SECONDS); false when no such key exists. */
export async function setKeyReviewTtl(ledger: Ledger, id: string, seconds: number | null): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET review_ttl_seconds = ? WHERE id = ?', args: [seconds, id] }),
  );
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

/** Sets a key's monthly spend cap (null: none); the next batch reads it under the write lock. */
export async function setKeySpendCap(ledger: Ledger, id: string, capMicros: bigint | null): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET spend_cap_micros = ? WHERE id = ?', args: [capMicros, id] }),
  );
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

export async function setKeySurface(ledger: Ledger, keyId: string, surface: string[] | null): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET surface = ? WHERE id = ?', args: [surface ? JSON.stringify(surface) : null, keyId] }),
  );
  invalidateKeyCache(ledger.read);
  return rs.rowsAffected > 0;
}

/**
 * API keys. A key is `fg_live_` + 256 random bits, shown once; the database
 * keeps its SHA-256 only. Authentication looks the hash up, which compares
 * no secret byte by byte.
 */
import { hash, randomBytes } from 'node:crypto';
import type { Client, Transaction } from './sql.ts';
import { newId, nowIso } from '../ids.ts';
import type { Ledger } from './db.ts';
import { countMonthlyHop } from './operator.ts';

export const KEY_PREFIX = 'fg_live_';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  hop_limit: number;
  hops_used: number;
  created_at: string;
  revoked_at: string | null;
  /** The declared act surface (`keys surface`), or undefined for the default: every preset. */
  surface?: string[] | undefined;
}

export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

function rowToKey(r: Record<string, unknown>): ApiKey {
  return {
    id: String(r.id),
    name: String(r.name),
    prefix: String(r.prefix),
    hop_limit: Number(r.hop_limit),
    hops_used: Number(r.hops_used),
    created_at: String(r.created_at),
    revoked_at: r.revoked_at == null ? null : String(r.revoked_at),
    surface: r.surface == null ? undefined : (JSON.parse(String(r.surface)) as string[]),
  };
}

const COLUMNS = 'id, name, prefix, hop_limit, hops_used, created_at, revoked_at, surface';

export async function createApiKey(
  ledger: Ledger,
  input: { name: string; hopLimit: number },
): Promise<{ key: ApiKey; secret: string }> {
  const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
  const key: ApiKey = {
    id: newId('key'),
    name: input.name,
    prefix: secret.slice(0, KEY_PREFIX.length + 4),
    hop_limit: input.hopLimit,
    hops_used: 0,
    created_at: nowIso(),
    revoked_at: null,
  };
  await ledger.write((tx) =>
    tx.execute({
      sql: 'INSERT INTO api_keys (id, name, secret_hash, prefix, hop_limit, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      args: [key.id, key.name, hashSecret(secret), key.prefix, key.hop_limit, key.created_at],
    }),
  );
  return { key, secret };
}

export async function findKeyBySecret(db: Client, secret: string): Promise<ApiKey | undefined> {
  const rs = await db.execute({ sql: `SELECT ${COLUMNS} FROM api_keys WHERE secret_hash = ?`, args: [hashSecret(secret)] });
  return rs.rows[0] ? rowToKey(rs.rows[0]) : undefined;
}

export async function getApiKey(db: Client | Transaction, id: string): Promise<ApiKey | undefined> {
  const rs = await db.execute({ sql: `SELECT ${COLUMNS} FROM api_keys WHERE id = ?`, args: [id] });
  return rs.rows[0] ? rowToKey(rs.rows[0]) : undefined;
}

export async function listApiKeys(db: Client): Promise<ApiKey[]> {
  const rs = await db.execute(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`);
  return rs.rows.map(rowToKey);
}

/** Revokes a key; returns false when no such key exists. Revoking twice keeps the first time. */
export async function revokeApiKey(ledger: Ledger, id: string): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?', args: [nowIso(), id] }),
  );
  return rs.rowsAffected > 0;
}

export async function setHopLimit(ledger: Ledger, id: string, hopLimit: number): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET hop_limit = ? WHERE id = ?', args: [hopLimit, id] }),
  );
  return rs.rowsAffected > 0;
}

/**
 * Counts one hop against the key's limit, inside the caller's transaction.
 * Returns false (and counts nothing) when the limit is already reached.
 */
export async function consumeHop(tx: Transaction, keyId: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: 'UPDATE api_keys SET hops_used = hops_used + 1 WHERE id = ? AND hops_used < hop_limit',
    args: [keyId],
  });
  if (rs.rowsAffected === 0) return false;
  await countMonthlyHop(tx, keyId);
  return true;
}

export async function setKeySurface(ledger: Ledger, keyId: string, surface: string[] | null): Promise<boolean> {
  const rs = await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE api_keys SET surface = ? WHERE id = ?', args: [surface ? JSON.stringify(surface) : null, keyId] }),
  );
  return rs.rowsAffected > 0;
}

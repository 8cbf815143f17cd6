/**
 * Idempotency records (the rule is api/idempotency.ts): one row per key and
 * Idempotency-Key, 'running' while its first request runs, then 'done' with
 * the stored answer, written in the same transaction as the act's effects.
 */
import { nowIso } from '../ids.ts';
import type { Transaction } from './sql.ts';

export interface IdempotencyRecord {
  request_hash: string;
  state: 'running' | 'done';
  status: number | null;
  headers: string | null;
  body: string | null;
  created_at: string;
}

/** The answer stored under a key's Idempotency-Key. */
export interface StoredAnswer {
  keyId: string;
  idemKey: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * Reserves `idemKey` for a request with `hash`, unless a live record exists:
 * then that record is returned and nothing changes. A 'running' record older
 * than `leaseMs` was abandoned by a request that died before committing, and is taken over.
 */
export async function reserveIdempotencyKey(
  tx: Transaction,
  r: { keyId: string; idemKey: string; hash: string; now: Date; leaseMs: number },
): Promise<IdempotencyRecord | undefined> {
  const abandonedBefore = nowIso(new Date(r.now.getTime() - r.leaseMs));
  // A record another node inserts meanwhile wins: the upsert below takes only an abandoned one.
  for (;;) {
    const live = await liveRecord(tx, r.keyId, r.idemKey, abandonedBefore);
    if (live) return live;
    const rs = await tx.execute({
      sql: `INSERT INTO idempotency (key_id, idem_key, request_hash, state, created_at) VALUES (?, ?, ?, 'running', ?)
            ON CONFLICT (key_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash, state = 'running', created_at = excluded.created_at
            WHERE idempotency.state = 'running' AND idempotency.created_at < ?`,
      args: [r.keyId, r.idemKey, r.hash, nowIso(r.now), abandonedBefore],
    });
    if (rs.rowsAffected === 1) return undefined;
  }
}

/** The record of `idemKey` unless there is none or it is a 'running' one taken before `abandonedBefore`. */
async function liveRecord(
  tx: Transaction,
  keyId: string,
  idemKey: string,
  abandonedBefore: string,
): Promise<IdempotencyRecord | undefined> {
  const rs = await tx.execute({
    sql: 'SELECT request_hash, state, status, headers, body, created_at FROM idempotency WHERE key_id = ? AND idem_key = ?',
    args: [keyId, idemKey],
  });
  const row = rs.rows[0];
  if (!row || (row.state === 'running' && String(row.created_at) < abandonedBefore)) return undefined;
  return {
    request_hash: String(row.request_hash),
    state: String(row.state) as IdempotencyRecord['state'],
    status: row.status == null ? null : Number(row.status),
    headers: row.headers == null ? null : String(row.headers),
    body: row.body == null ? null : String(row.body),
    created_at: String(row.created_at),
  };
}

export async function storeAnswer(tx: Transaction, a: StoredAnswer): Promise<void> {
  await tx.execute({
    sql: "UPDATE idempotency SET state = 'done', status = ?, headers = ?, body = ? WHERE key_id = ? AND idem_key = ?",
    args: [a.status, JSON.stringify(a.headers), JSON.stringify(a.body), a.keyId, a.idemKey],
  });
}

/** Frees a reservation whose request failed: nothing of it was committed, a corrected retry may run. */
export async function releaseReservation(tx: Transaction, keyId: string, idemKey: string): Promise<void> {
  await tx.execute({ sql: "DELETE FROM idempotency WHERE key_id = ? AND idem_key = ? AND state = 'running'", args: [keyId, idemKey] });
}

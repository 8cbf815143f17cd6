/**
 * GAM credits: a balance granted by a clearing window that a key's charges
 * draw on (docs/gam-credits.md). The meter lines stay what they are; the
 * balance is what of them the credits pay: every charge of the key after the
 * grant (the window's own price excepted) draws on it, in time order, until it
 * is spent or the window ends.
 */
import type { Client, Transaction } from './sql.ts';
import { usage } from './meter.ts';
import { usdToMicros } from '../catalog/money.ts';

export interface GamGrant {
  id: string;
  keyId: string;
  sku: string;
  creditsMicros: bigint;
  grantedAt: string;
  expiresAt: string;
  receiptId: string;
}

const toGrant = (r: Record<string, unknown>): GamGrant => ({
  id: String(r.id),
  keyId: String(r.key_id),
  sku: String(r.sku),
  creditsMicros: BigInt(String(r.credits_micros)),
  grantedAt: String(r.granted_at),
  expiresAt: String(r.expires_at),
  receiptId: String(r.receipt_id),
});

/** The key's grant in force at `now`, if any. */
export async function activeGrant(db: Client | Transaction, keyId: string, now: string): Promise<GamGrant | undefined> {
  const rs = await db.execute({
    sql: 'SELECT * FROM gam_grants WHERE key_id = ? AND granted_at <= ? AND expires_at > ? ORDER BY granted_at DESC LIMIT 1',
    args: [keyId, now, now],
  });
  return rs.rows[0] ? toGrant(rs.rows[0] as unknown as Record<string, unknown>) : undefined;
}

export async function insertGrant(tx: Transaction, g: GamGrant): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO gam_grants (id, key_id, sku, credits_micros, granted_at, expires_at, receipt_id) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [g.id, g.keyId, g.sku, g.creditsMicros, g.grantedAt, g.expiresAt, g.receiptId],
  });
}

export interface GamBalance {
  grant: GamGrant;
  /** The key's charges since the grant, the window's own price excepted. */
  chargedMicros: bigint;
  /** What the credits paid of them. */
  drawnMicros: bigint;
  remainingMicros: bigint;
  /** Charges past the credits: owed as usual. */
  beyondMicros: bigint;
}

/** The balance of the key's grant in force at `now` (usage of the meter since the grant), or undefined without one. */
export async function gamBalance(db: Client, keyId: string, now: string, windowSkus: readonly string[]): Promise<GamBalance | undefined> {
  const grant = await activeGrant(db, keyId, now);
  if (!grant) return undefined;
  const u = await usage(db, keyId, grant.grantedAt);
  const windows = u.by_sku.filter((s) => windowSkus.includes(s.sku)).reduce((a, s) => a + BigInt(usdToMicros(s.amount_usd)), 0n);
  const charged = u.total_micros - windows;
  const drawn = charged < grant.creditsMicros ? charged : grant.creditsMicros;
  return { grant, chargedMicros: charged, drawnMicros: drawn, remainingMicros: grant.creditsMicros - drawn, beyondMicros: charged - drawn };
}

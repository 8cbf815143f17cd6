/**
 * Depository twins (SPEC 2.5, 6): each asset's current state, one row per owning
 * account and asset, and the hash chain of its attested events. The rules are in
 * src/domain/depository.ts; src/api/site/depository.ts decides and answers.
 */
import type { Twin } from '../domain/depository.ts';
import type { Client, Transaction } from './sql.ts';

/** The twin of `assetId` owned by `owner` (an account: ownerId), or undefined before its first event. */
export async function findDepositoryAsset(db: Client | Transaction, owner: string, assetId: string): Promise<Twin | undefined> {
  const r = (
    await db.execute({
      sql: 'SELECT custody_units, token_supply, custodian, seq, chain_hash FROM depository_assets WHERE key_id = ? AND asset_id = ?',
      args: [owner, assetId],
    })
  ).rows[0];
  return r
    ? {
        custody_units: Number(r.custody_units),
        token_supply: Number(r.token_supply),
        custodian: r.custodian == null ? null : String(r.custodian),
        seq: Number(r.seq),
        chain_hash: String(r.chain_hash),
      }
    : undefined;
}

export interface DepositoryAttestation {
  /** The owning account (ownerId); the acting key is on the receipt. */
  owner: string;
  assetId: string;
  eventType: string;
  /** The twin after the event, with the event's place in the chain. */
  twin: Twin;
  receiptId: string;
  at: string;
}

/** Stores the twin after an attested event (creating it on the first) and the event's chain link. */
export async function recordDepositoryAttestation(tx: Transaction, a: DepositoryAttestation): Promise<void> {
  await tx.execute({
    sql: `INSERT INTO depository_assets (key_id, asset_id, custody_units, token_supply, custodian, seq, chain_hash, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
          ON CONFLICT (key_id, asset_id) DO UPDATE SET custody_units = excluded.custody_units, token_supply = excluded.token_supply,
          custodian = excluded.custodian, seq = excluded.seq, chain_hash = excluded.chain_hash, updated_at = excluded.updated_at`,
    args: [a.owner, a.assetId, a.twin.custody_units, a.twin.token_supply, a.twin.custodian, a.twin.seq, a.twin.chain_hash, a.at],
  });
  await tx.execute({
    sql: 'INSERT INTO depository_events (key_id, asset_id, seq, event_type, chain_hash, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [a.owner, a.assetId, a.twin.seq, a.eventType, a.twin.chain_hash, a.receiptId, a.at],
  });
}

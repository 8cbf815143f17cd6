/** Issuer-pays index listings: one row per paid year of a vendor's listing. */
import type { Client, Transaction } from './sql.ts';

export interface ListingRow {
  vendor: string;
  accountId: string;
  name: string;
  url: string | null;
  listedAt: string;
  listedUntil: string;
  receiptId: string;
}

const toRow = (r: Record<string, unknown>): ListingRow => ({
  vendor: String(r.vendor),
  accountId: String(r.account_id),
  name: String(r.name),
  url: r.url === null ? null : String(r.url),
  listedAt: String(r.listed_at),
  listedUntil: String(r.listed_until),
  receiptId: String(r.receipt_id),
});

/** The vendor's listing in force at `now`, if any. */
export async function activeListing(db: Client | Transaction, vendor: string, now: string): Promise<ListingRow | undefined> {
  const rs = await db.execute({
    sql: 'SELECT * FROM issuer_listings WHERE vendor = ? AND listed_until > ? ORDER BY listed_until DESC LIMIT 1',
    args: [vendor, now],
  });
  return rs.rows[0] ? toRow(rs.rows[0] as unknown as Record<string, unknown>) : undefined;
}

export async function insertListing(tx: Transaction, l: ListingRow): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO issuer_listings (vendor, account_id, name, url, listed_at, listed_until, receipt_id) VALUES (?, ?, ?, ?, ?, ?, ?)',
    args: [l.vendor, l.accountId, l.name, l.url, l.listedAt, l.listedUntil, l.receiptId],
  });
}

/** Every listing in force at `now`, by vendor. */
export async function activeListings(db: Client, now: string): Promise<ListingRow[]> {
  const rs = await db.execute({
    sql: 'SELECT * FROM issuer_listings WHERE listed_until > ? ORDER BY vendor, listed_until DESC',
    args: [now],
  });
  const seen = new Set<string>();
  return rs.rows
    .map((r) => toRow(r as unknown as Record<string, unknown>))
    .filter((l) => !seen.has(l.vendor) && (seen.add(l.vendor), true));
}

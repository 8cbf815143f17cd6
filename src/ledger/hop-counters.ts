/**
 * Hop counters: a key's hops per UTC day (hop_counters), the one count its hop
 * limit is checked against. The act pipeline (acts.ts) reads the quotas of a
 * group's keys and adds what the group counted, under the write lock.
 */
import { periodStart } from '../domain/quota.ts';
import { insertRows, type Fragment, type Transaction } from './sql.ts';

/**
 * A key's hops in its current period, summed from its daily hop counters: the
 * one count of hops (the operator's monthly figure sums the same rows). The
 * period starts at 00:00 UTC of the day, of the ISO week's Monday, of the
 * month's first day (domain/quota.ts, computed here and passed as arguments,
 * so the text is the same on every engine); 'none' counts every hop.
 */
export function hopsThisPeriod(now = new Date()): Fragment {
  return {
    sql: `(SELECT COALESCE(SUM(h.hops), 0) FROM hop_counters h WHERE h.key_id = api_keys.id AND h.day >= CASE api_keys.hop_period
    WHEN 'day' THEN ? WHEN 'week' THEN ? WHEN 'month' THEN ? ELSE '' END)`,
    args: (['day', 'week', 'month'] as const).map((p) => periodStart(p, now).slice(0, 10)),
  };
}

/** A key's hop quota as read under the write lock, and the hops a batch of acts adds to it. */
export interface HopQuota {
  id: string;
  hopLimit: number;
  /** Hops counted in the current period before this batch. */
  used: number;
  added: number;
}

/** The quotas of the keys of `ids` that are not revoked, in one query (one statement text whatever the count). */
export async function readHopQuotas(tx: Transaction, ids: Iterable<string>): Promise<Map<string, HopQuota>> {
  const list = [...new Set(ids)];
  if (list.length === 0) return new Map();
  const where = tx.dialect.oneOf('id', list);
  const hops = hopsThisPeriod();
  const rs = await tx.execute({ sql: `SELECT id, hop_limit, ${hops.sql} AS used FROM api_keys WHERE revoked_at IS NULL AND ${where.sql}`, args: [...hops.args, ...where.args] });
  return new Map(rs.rows.map((r) => [String(r.id), { id: String(r.id), hopLimit: Number(r.hop_limit), used: Number(r.used), added: 0 }]));
}

/** Adds what a batch counted to each key's hop counter of the UTC day of `now`, in one multi-row statement. */
export async function writeHopCounts(tx: Transaction, quotas: readonly HopQuota[], now: Date): Promise<void> {
  const day = now.toISOString().slice(0, 10);
  await insertRows(
    tx,
    'hop_counters',
    ['key_id', 'day', 'hops'],
    quotas.filter((q) => q.added > 0).map((q) => [q.id, day, q.added]),
    ' ON CONFLICT (key_id, day) DO UPDATE SET hops = hop_counters.hops + excluded.hops',
  );
}

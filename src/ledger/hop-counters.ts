/**
 * Hop counters: a key's hops per UTC day (hop_counters), the one count its hop
 * limit is checked against. The act pipeline (acts.ts) reads the quotas of a
 * group's keys and adds what the group counted, under the write lock.
 */
import { periodStart } from '../domain/quota.ts';
import { keySpendOf, spendColumns, type CapState, type KeySpend } from './spend-caps.ts';
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
  /** The key's monthly spend caps (its own, its account's) when either is set (spend-caps.ts). */
  spend: KeySpend | undefined;
}

/** The quotas of a group's keys, and the account caps they share. */
export interface GroupQuotas {
  keys: Map<string, HopQuota>;
  /** One state per capped account, shared by the group's keys of that account. */
  accountCaps: Map<string, CapState>;
}

/**
 * The quotas of the keys of `ids` that are not revoked, with their spend caps,
 * in one query (one statement text whatever the count).
 */
export async function readHopQuotas(tx: Transaction, ids: Iterable<string>, now = new Date()): Promise<GroupQuotas> {
  const list = [...new Set(ids)];
  const accountCaps = new Map<string, CapState>();
  if (list.length === 0) return { keys: new Map(), accountCaps };
  const where = tx.dialect.oneOf('api_keys.id', list);
  const hops = hopsThisPeriod(now);
  const spend = spendColumns(now);
  const rs = await tx.execute({
    sql: `SELECT api_keys.id AS id, api_keys.hop_limit AS hop_limit, ${hops.sql} AS used, ${spend.sql}
    FROM api_keys LEFT JOIN accounts a ON a.id = api_keys.account_id WHERE api_keys.revoked_at IS NULL AND ${where.sql}`,
    args: [...hops.args, ...spend.args, ...where.args],
  });
  const keys = new Map<string, HopQuota>();
  for (const r of rs.rows) {
    const id = String(r.id);
    keys.set(id, { id, hopLimit: Number(r.hop_limit), used: Number(r.used), added: 0, spend: keySpendOf(id, r, accountCaps) });
  }
  return { keys, accountCaps };
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

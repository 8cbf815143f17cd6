/**
 * Hop quota periods (issue 14): a key's hop limit counts over a UTC calendar
 * period and starts again at the next one. Pure date arithmetic, used where
 * the ledger counts hops under the write lock (readHopQuotas in api-keys.ts).
 */
export const HOP_PERIODS = ['day', 'week', 'month', 'none'] as const;
export type HopPeriod = (typeof HOP_PERIODS)[number];

/** Start of the period containing `now` (RFC 3339, UTC); '' for "none" (one period forever). */
export function periodStart(period: HopPeriod, now: Date = new Date()): string {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  switch (period) {
    case 'month':
      return new Date(Date.UTC(y, m, 1)).toISOString();
    case 'week': // ISO weeks start on Monday
      return new Date(Date.UTC(y, m, d - ((now.getUTCDay() + 6) % 7))).toISOString();
    case 'day':
      return new Date(Date.UTC(y, m, d)).toISOString();
    case 'none':
      return '';
  }
}

/** When the period containing `now` ends and the count starts again (null for "none"). */
export function periodReset(period: HopPeriod, now: Date = new Date()): string | null {
  if (period === 'none') return null;
  const start = new Date(periodStart(period, now));
  if (period === 'month') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)).toISOString();
  return new Date(start.getTime() + (period === 'week' ? 7 : 1) * 86_400_000).toISOString();
}

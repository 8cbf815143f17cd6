/**
 * The Clear bps tiers on monthly cleared exposure (SPEC 2.4), applied
 * graduated: like income-tax brackets, each tier's bps applies only to the
 * part of the month's exposure that falls inside that tier. So the fee of a
 * month never falls when its exposure rises (SPEC does not say how tiers
 * apply; a whole-month rate would charge 2000.00 at 10,000,000.00 and 1000.00
 * a cent later). Pure; money in micro-USD, each fee rounded half up to the
 * cent once, over the exact sum of the bands.
 */
import { bpsProduct, feeFromBpsProducts, MICROS_PER_USD } from '../catalog/money.ts';

export interface BpsTier {
  id: string;
  bps: number;
  cleared_usd_monthly_up_to: number | null;
  label?: string;
}

const ceilingMicros = (t: BpsTier): bigint | null =>
  t.cleared_usd_monthly_up_to === null ? null : BigInt(t.cleared_usd_monthly_up_to) * MICROS_PER_USD;

/** The part of `exposureMicros` inside each tier, in tier order (ceilings inclusive). */
export function bands<T extends BpsTier>(tiers: readonly T[], exposureMicros: bigint): Array<{ tier: T; micros: bigint }> {
  const out: Array<{ tier: T; micros: bigint }> = [];
  let floor = 0n;
  for (const tier of tiers) {
    const ceiling = ceilingMicros(tier);
    const top = ceiling === null || exposureMicros < ceiling ? exposureMicros : ceiling;
    out.push({ tier, micros: top > floor ? top - floor : 0n });
    if (ceiling === null || exposureMicros <= ceiling) break;
    floor = ceiling;
  }
  return out;
}

/** The tier the month's last dollar falls in (the marginal rate); the first tier for zero. */
export function marginalTier<T extends BpsTier>(tiers: readonly T[], exposureMicros: bigint): T {
  for (const t of tiers) {
    const c = ceilingMicros(t);
    if (c === null || exposureMicros <= c) return t;
  }
  return tiers[tiers.length - 1]!;
}

/** The graduated bps fee of a month's cleared exposure, micro-USD (whole cents). */
export function graduatedFeeMicros(tiers: readonly BpsTier[], exposureMicros: bigint): bigint {
  return feeFromBpsProducts(bands(tiers, exposureMicros).map((b) => bpsProduct(b.micros, b.tier.bps)));
}

/**
 * The fee of adding `exposureMicros` to a month that already cleared
 * `beforeMicros`: the graduated fee after minus the graduated fee before, so
 * the fees of a month's acts add up to the month's graduated fee exactly.
 */
export function marginalFeeMicros(tiers: readonly BpsTier[], beforeMicros: bigint, exposureMicros: bigint): bigint {
  return graduatedFeeMicros(tiers, beforeMicros + exposureMicros) - graduatedFeeMicros(tiers, beforeMicros);
}

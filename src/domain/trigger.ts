/**
 * The trigger rail's pure rules (SPEC 2.5 layers 2, 4, 7; SPEC 3 trigger row).
 *
 * SPEC leaves the threshold condition "not shown"; ours is a metric name, an
 * operator and a decimal value: the trigger fires when `reading <op> value`.
 * A fire charges bps on the enabled exposure: the obligation's fee_bps, else
 * (fee_bps null) the Clear bps tier that the key's monthly cleared exposure,
 * this fire included, falls in.
 */
import { bpsFeeMicros } from './money.ts';
import { parseSigned } from './oracle.ts';

export const TRIGGER_STATES = ['ARMED', 'FIRED'] as const;
export type TriggerState = (typeof TRIGGER_STATES)[number];

export const OPERATORS = ['gte', 'gt', 'lte', 'lt', 'eq'] as const;
export type Operator = (typeof OPERATORS)[number];

export interface Threshold {
  metric: string;
  operator: Operator;
  value: string;
}

/** True when `reading` reaches the threshold. */
export function thresholdReached(t: Threshold, reading: string): boolean {
  const r = parseSigned(reading);
  const v = parseSigned(t.value);
  switch (t.operator) {
    case 'gte':
      return r >= v;
    case 'gt':
      return r > v;
    case 'lte':
      return r <= v;
    case 'lt':
      return r < v;
    case 'eq':
      return r === v;
  }
}

export interface BpsTier {
  id: string;
  bps: number;
  cleared_usd_monthly_up_to: number | null;
}

/** The Clear tier for a monthly cleared exposure (micro-USD): the first whose ceiling it does not exceed. */
export function clearTier(tiers: readonly BpsTier[], clearedMicros: bigint): BpsTier {
  for (const t of tiers) {
    if (t.cleared_usd_monthly_up_to === null || clearedMicros <= BigInt(t.cleared_usd_monthly_up_to) * 1_000_000n) return t;
  }
  return tiers[tiers.length - 1]!;
}

export interface FireFee {
  bps: number;
  source: 'obligation' | 'clear_tier';
  tier?: string;
  feeMicros: bigint;
}

/**
 * The fee of a fire: `feeBps` when the obligation sets one, else the Clear tier of
 * `monthBeforeMicros + exposureMicros` (the key's cleared exposure this month).
 */
export function fireFee(exposureMicros: bigint, feeBps: number | null, tiers: readonly BpsTier[], monthBeforeMicros: bigint): FireFee {
  if (feeBps !== null) return { bps: feeBps, source: 'obligation', feeMicros: bpsFeeMicros(exposureMicros, feeBps) };
  const tier = clearTier(tiers, monthBeforeMicros + exposureMicros);
  return { bps: tier.bps, source: 'clear_tier', tier: tier.id, feeMicros: bpsFeeMicros(exposureMicros, tier.bps) };
}

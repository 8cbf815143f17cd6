/**
 * The trigger rail's pure rules (SPEC 2.5 layers 2, 4, 7; SPEC 3 trigger row).
 *
 * SPEC leaves the threshold condition "not shown"; ours is a metric name, an
 * operator and a decimal value: the trigger fires when `reading <op> value`.
 * A fire charges bps on the enabled exposure: the obligation's fee_bps, else
 * (fee_bps null) the Clear bps tiers, graduated, on the key's monthly cleared
 * exposure. The obligation's fee_bps is the template's: a caller cannot change it.
 */
import { marginalFeeMicros, marginalTier, type BpsTier } from './bps-tiers.ts';
import { bpsFeeMicros } from '../catalog/money.ts';
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

export type { BpsTier };

export interface FireFee {
  bps: number;
  source: 'obligation' | 'clear_tier';
  tier?: string;
  feeMicros: bigint;
}

/**
 * The fee_bps of an obligation: always its template's (SPEC 2.5, 3: "the
 * obligation fee_bps, with a fallback to the Clear bps tier"). A caller may
 * restate it but never change it: undefined or the same value is accepted,
 * anything else (0, null, a higher value) is refused by the caller of this rule.
 */
export function obligationFeeBps(
  templateFeeBps: number | null,
  requested: number | null | undefined,
): { ok: true; feeBps: number | null } | { ok: false; message: string } {
  if (requested === undefined || requested === templateFeeBps) return { ok: true, feeBps: templateFeeBps };
  return {
    ok: false,
    message: `is the template's (${templateFeeBps === null ? 'null: the Clear bps tier' : templateFeeBps}); it cannot be set by the caller`,
  };
}

/**
 * The fee of a fire: `feeBps` when the obligation has one, else the Clear
 * tiers applied graduated to this exposure on top of `monthBeforeMicros` (the
 * key's cleared exposure this month before the fire). Whole cents.
 */
export function fireFee(exposureMicros: bigint, feeBps: number | null, tiers: readonly BpsTier[], monthBeforeMicros: bigint): FireFee {
  if (feeBps !== null) return { bps: feeBps, source: 'obligation', feeMicros: bpsFeeMicros(exposureMicros, feeBps) };
  const tier = marginalTier(tiers, monthBeforeMicros + exposureMicros);
  return { bps: tier.bps, source: 'clear_tier', tier: tier.id, feeMicros: marginalFeeMicros(tiers, monthBeforeMicros, exposureMicros) };
}

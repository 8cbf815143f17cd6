/**
 * Clear (SPEC 1, 2.4): the execute-gate decision and the bps tier of cleared
 * exposure. Pure: no I/O.
 *
 *   fuse DEAD                               DENY     (fails closed)
 *   fuse UNSIGNED                           SILENCE  (the gate stays silent)
 *   act kind outside the declared surface   DENY
 *   review requested, or exposure above     HOLD     (human review)
 *     the caller's hold_above
 *   otherwise                               PERMIT   (the exposure is cleared)
 *
 * Refusals (DENY, HOLD, SILENCE) are metered as the NAP `hold` SKU (nap_rule;
 * the NAP catalog's `hold` is "POST /api/v1/execute-gate (DENY/SILENCE)").
 * The facts a decision was taken on are recorded in its receipt, so that a
 * counterfactual replay can run the same rule on them later.
 */
import { DATA } from '../catalog/catalogs.ts';
import type { FuseState } from './fuse.ts';
import { graduatedFeeMicros, marginalTier, type BpsTier } from './bps-tiers.ts';

export type ClearDecision = 'PERMIT' | 'DENY' | 'HOLD' | 'SILENCE';

/** Everything the execute-gate rule looks at. */
export interface ClearFacts {
  state: FuseState;
  in_surface: boolean;
  /** Exposure of the act in micro-USD (0 when not stated). */
  exposure_micros: number;
  /** HOLD when the exposure is above this (micro-USD); null for no threshold. */
  hold_above_micros: number | null;
  review_requested: boolean;
}

export interface ClearOutcome {
  decision: ClearDecision;
  /** Which rule decided: fuse_dead, fuse_unsigned, outside_surface, review_requested, above_hold, cleared. */
  rule: string;
  reason: string;
}

/** Rules version recorded in every receipt; bump it when the table above changes. */
export const CLEAR_RULES_VERSION = 'clear-rules-v1';

export function decideClear(f: ClearFacts): ClearOutcome {
  if (f.state === 'DEAD') return { decision: 'DENY', rule: 'fuse_dead', reason: 'the fuse is DEAD: it fails closed' };
  if (f.state === 'UNSIGNED')
    return { decision: 'SILENCE', rule: 'fuse_unsigned', reason: 'the fuse is UNSIGNED: it has never been charged' };
  if (!f.in_surface) return { decision: 'DENY', rule: 'outside_surface', reason: 'the act kind is outside the declared surface' };
  if (f.review_requested) return { decision: 'HOLD', rule: 'review_requested', reason: 'human review was requested' };
  if (f.hold_above_micros !== null && f.exposure_micros > f.hold_above_micros) {
    return { decision: 'HOLD', rule: 'above_hold', reason: 'the exposure is above hold_above_usd: human review' };
  }
  return { decision: 'PERMIT', rule: 'cleared', reason: `the fuse is ${f.state}: the act is cleared` };
}

export type { BpsTier };

export const BPS_TIERS: readonly (BpsTier & { label: string })[] = DATA.clear.bps_tiers;

/** The tier a month's cleared exposure has reached: the one its last dollar falls in (graduated; see bps-tiers.ts). */
export function tierFor(exposureMicros: bigint): BpsTier & { label: string } {
  return marginalTier(BPS_TIERS, exposureMicros);
}

/** bps fee on a month's cleared exposure, graduated over the tiers, micro-USD (whole cents). */
export function exposureFeeMicros(exposureMicros: bigint): bigint {
  return graduatedFeeMicros(BPS_TIERS, exposureMicros);
}

/** The UTC calendar month of a time, `YYYY-MM`. */
export function monthOf(d: Date = new Date()): string {
  return d.toISOString().slice(0, 7);
}

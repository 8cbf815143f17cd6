/**
 * The named rules that price a charge whose amount is not a fixed toll: a
 * route's declaration names the rule beside the SKU (RouteDoc.chargeRules),
 * and the route bills through it (api/charges.ts). Pure: what a rule needs
 * (an exposure, the month's fires so far) is read by the act and passed in.
 */
import type { BpsTier } from './bps-tiers.ts';
import { fireFee } from './trigger.ts';

export const AMOUNT_RULES = {
  /** A trigger fire's fee: the template's fixed bps of the exposure it enables, else the marginal Clear tier of the month's fires. */
  trigger_fire_fee: (i: { exposureMicros: bigint; feeBps: number | null; tiers: readonly BpsTier[]; monthBeforeMicros: bigint }): bigint =>
    fireFee(i.exposureMicros, i.feeBps, i.tiers, i.monthBeforeMicros).feeMicros,
} as const;

export type AmountRule = keyof typeof AMOUNT_RULES;
export type AmountInput = Parameters<(typeof AMOUNT_RULES)[AmountRule]>[0];

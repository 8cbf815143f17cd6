/**
 * The named rules that price a charge whose amount is not a fixed toll: a
 * route's declaration names the rule beside the SKU (RouteDoc.chargeRules),
 * and the route bills through it (api/charges.ts). Two kinds:
 *
 * - `AMOUNT_RULES`: the amount depends on the act (an exposure, a count, the
 *   month's figures). Pure: what a rule needs is read by the act and passed in.
 * - `CATALOG_PRICES`: the price a catalog states for the SKU (not in the toll
 *   table), read from that catalog, the one place that states it.
 */
import { DATA } from '../catalog/catalogs.ts';
import type { BpsTier } from './bps-tiers.ts';
import { exposureFeeMicros } from './clear.ts';
import { formatUsd, usdToMicros } from '../catalog/money.ts';
import { GA_DECLARE_TOLL_MICROS, sharpMicros } from './orn.ts';
import { operatorCheckout } from './pricing.ts';
import { fireFee } from './trigger.ts';

export const AMOUNT_RULES = {
  /** A trigger fire's fee: the template's fixed bps of the exposure it enables, else the marginal Clear tier of the month's fires. */
  trigger_fire_fee: (i: { exposureMicros: bigint; feeBps: number | null; tiers: readonly BpsTier[]; monthBeforeMicros: bigint }): bigint =>
    fireFee(i.exposureMicros, i.feeBps, i.tiers, i.monthBeforeMicros).feeMicros,
  /** A SHARP slice: agents in the graph x events x the ORN catalog's SHARP toll. */
  orn_sharp: (i: { agents: number; events: number }): bigint => sharpMicros(i.agents, i.events),
  /** The month's bps fee on the exposure the key cleared (graduated over the Clear tiers). */
  clear_bps_fee: (i: { clearedMicros: bigint }): bigint => exposureFeeMicros(i.clearedMicros),
  /** The operator checkout: the greater of the floor, 10 bps of cleared exposure and the per-hop toll, less the month's per-act charges. */
  operator_checkout: (i: { floorMicros: bigint; exposureMicros: bigint; hops: number; chargedMicros: bigint }): bigint =>
    operatorCheckout(i).checkoutMicros,
} as const;

export type AmountRule = keyof typeof AMOUNT_RULES;
export type AmountInput = Parameters<(typeof AMOUNT_RULES)[AmountRule]>[0];

/** The clearing catalog's window of a SKU; throws for one it does not list (a declaration's bug). */
const clearingWindow = (sku: string) => {
  const w = DATA.clearing.skus.find((x) => x.id === sku);
  if (!w) throw new Error(`the clearing catalog lists no window ${sku}`);
  return w;
};

export const CATALOG_PRICES = {
  /** A clearing window (GAM credits purchase): its price in the clearing catalog. */
  clearing_window: (sku: string): bigint => BigInt(usdToMicros(clearingWindow(sku).price_usd)),
  /** A year's vendor listing on the issuer-pays index: the issuer-pays catalog's fee. */
  vendor_listing_annual: (): bigint => BigInt(usdToMicros(DATA.issuer_pays.fees_usd.vendor_listing_annual_usd)),
  /** A Signal mandate past the included count: the Signal catalog's overage. */
  mandate_overage: (): bigint => BigInt(usdToMicros(DATA.signal.pricing_usd.mandate_overage_usd)),
  /** A General Average declaration: the ORN catalog's flat toll. */
  ga_declare: (): bigint => BigInt(GA_DECLARE_TOLL_MICROS),
  /** An absence witness: the absence catalog's toll. */
  absence_witness: (): bigint => BigInt(usdToMicros(DATA.absence.witness_toll_usd)),
  /** An RR-1 challenge (a keyed 428): the require-receipt catalog's challenge toll. */
  rr1_challenge: (): bigint => BigInt(usdToMicros(DATA.require_receipt.challenge_toll_usd)),
} as const;

export type CatalogPrice = keyof typeof CATALOG_PRICES;

/** How one declared SKU is charged, when not at its toll (RouteDoc.chargeRules, src/api/charges.ts). */
export interface ChargeRule {
  /** The named rule that computes its amount from the act's input (default: its toll). */
  amount?: AmountRule;
  /** The catalog whose price it costs, when a catalog rather than the toll table states it. */
  price?: CatalogPrice;
  /** A NAP line (a refusal's hold; default: only the SKU `hold`). */
  nap?: boolean;
}

/** Whether a declared SKU is a NAP line: its rule says so, else only the refusal's `hold`. */
export const isNapSku = (sku: string, rules: Readonly<Record<string, ChargeRule>> = {}): boolean => rules[sku]?.nap ?? sku === 'hold';

/** One line of an act's charges, as the declaration prices it (the key is the act's). */
export interface BilledLine {
  sku: string;
  amountMicros: number;
  nap: boolean;
}

/** The public `charge` object of a line (its schema: src/api/charge.ts). */
export interface ChargeView {
  sku: string;
  amount_usd: string;
  nap: boolean;
}

/** The charge object of a meter line. */
export function chargeView(c: { sku: string; amountMicros: number | bigint; nap?: boolean | undefined }): ChargeView {
  return { sku: c.sku, amount_usd: formatUsd(c.amountMicros), nap: c.nap === true };
}

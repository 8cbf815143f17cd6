/**
 * What each decision charges, and the operator formula (SPEC 1, 8). Pure.
 *
 * Governed acts that go ahead pay their commodity toll; refusals (BLOCK, HOLD,
 * DENY, SILENCE) pay the negative-act premium of the NAP catalog instead
 * (nap_rule): DENY and SILENCE on the execute gate are the `hold` SKU, and so
 * are BLOCK and HOLD here.
 */
import { tollMicros } from '../catalog/tolls.ts';

export const REFUSALS = ['BLOCK', 'HOLD', 'DENY', 'SILENCE'] as const;

export function isRefusal(decision: string): boolean {
  return (REFUSALS as readonly string[]).includes(decision);
}

export interface Sku {
  sku: string;
  nap: boolean;
  amountMicros: number;
}

/** The SKU a decision is charged as: `allowed` for a decision that goes ahead, NAP `hold` for a refusal. */
export function skuFor(decision: string, allowed: string): Sku {
  const sku = isRefusal(decision) ? 'hold' : allowed;
  return { sku, nap: isRefusal(decision), amountMicros: tollMicros(sku) };
}

export const OPERATOR_BPS = 10;
export const OPERATOR_PER_HOP_SKU = 'execute_gate';

/**
 * Operator checkout after the one production write: the greater of the floor,
 * 10 bps of the cleared exposure, and 0.10 USD per hop. All micro-USD.
 */
export function operatorChargeMicros(input: { floorMicros: bigint; exposureMicros: bigint; hops: number }): bigint {
  const bps = (input.exposureMicros * BigInt(OPERATOR_BPS) + 5_000n) / 10_000n;
  const perHop = BigInt(tollMicros(OPERATOR_PER_HOP_SKU)) * BigInt(input.hops);
  return [input.floorMicros, bps, perHop].reduce((a, b) => (b > a ? b : a));
}

/**
 * What each decision charges, and the operator formula (SPEC 1, 8). Pure.
 *
 * Governed acts that go ahead pay their commodity toll; refusals (BLOCK, HOLD,
 * DENY, SILENCE) pay the negative-act premium of the NAP catalog instead
 * (nap_rule): DENY and SILENCE on the execute gate are the `hold` SKU, and so
 * are BLOCK and HOLD here.
 */
import { OPERATOR_BPS, OPERATOR_PER_HOP_SKU } from '../catalog/operator-prices.ts';
import { tollMicros } from '../catalog/tolls.ts';
import { bpsFeeMicros, roundToCent } from '../catalog/money.ts';

export const REFUSALS = ['BLOCK', 'HOLD', 'DENY', 'SILENCE'] as const;

export function isRefusal(decision: string): boolean {
  return (REFUSALS as readonly string[]).includes(decision);
}

/**
 * Operator checkout after the one production write: the greater of the floor,
 * 10 bps of the cleared exposure, and 0.10 USD per hop. All micro-USD, whole cents.
 */
export function operatorChargeMicros(input: { floorMicros: bigint; exposureMicros: bigint; hops: number }): bigint {
  return operatorCheckout({ ...input, chargedMicros: 0n }).dueMicros;
}

export type OperatorBasis = 'floor' | 'bps' | 'per_hop';

export interface OperatorCheckout {
  /** The three terms of the formula. */
  floorMicros: bigint;
  bpsMicros: bigint;
  perHopMicros: bigint;
  /** Which term is the greatest (ties: floor, then bps, then per_hop). */
  basis: OperatorBasis;
  /** What the period owes under the formula: the greatest term. */
  dueMicros: bigint;
  /** What the period's per-act charges already billed. */
  chargedMicros: bigint;
  /** The checkout charge: what is due beyond what was already charged, never negative. */
  checkoutMicros: bigint;
}

/**
 * A period's operator checkout (our reading of SPEC 1 and 8.3, see
 * docs/pricing.md): the period owes the greater of the floor, 10 bps of its
 * cleared exposure, and 0.10 USD per hop; the per-act charges already billed
 * count toward it, and the checkout (one production write, once per key and
 * month) charges the rest. So nothing is charged twice and a period never
 * owes less than the formula.
 */
export function operatorCheckout(input: {
  floorMicros: bigint;
  exposureMicros: bigint;
  hops: number;
  chargedMicros: bigint;
}): OperatorCheckout {
  const terms: Array<[OperatorBasis, bigint]> = [
    ['floor', roundToCent(input.floorMicros)],
    ['bps', bpsFeeMicros(input.exposureMicros, OPERATOR_BPS)],
    ['per_hop', BigInt(tollMicros(OPERATOR_PER_HOP_SKU)) * BigInt(input.hops)],
  ];
  const [basis, due] = terms.reduce((a, b) => (b[1] > a[1] ? b : a));
  const rest = due - input.chargedMicros;
  return {
    floorMicros: terms[0]![1],
    bpsMicros: terms[1]![1],
    perHopMicros: terms[2]![1],
    basis,
    dueMicros: due,
    chargedMicros: input.chargedMicros,
    checkoutMicros: rest > 0n ? rest : 0n,
  };
}

/** The running service's x402 payments: one facilitator client per app, one PaidResource per paid route. */
import { priceInAtomicUnits, type X402Resource } from '../../domain/x402.ts';
import type { X402Context } from './context.ts';
import { httpFacilitator, type Facilitator } from './facilitator.ts';
import { PaidResource } from './gate.ts';
import { x402SetupOf } from './settings.ts';

const facilitators = new WeakMap<X402Context, Facilitator>();

/** The facilitator of this app, or undefined when x402 is not configured. */
export function facilitatorOf(ctx: X402Context): Facilitator | undefined {
  const setup = x402SetupOf(ctx.config);
  if (!setup) return undefined;
  let f = facilitators.get(ctx);
  if (!f) facilitators.set(ctx, (f = httpFacilitator(setup)));
  return f;
}

/**
 * A resource paid per call, or undefined when x402 is off. Every price it may
 * ask (`pricesMicros`: its listed prices, and a cent for one a rule computes)
 * must convert exactly into the asset's units, else start-up stops.
 */
export function paidResource(ctx: X402Context, resource: X402Resource, pricesMicros: readonly number[]): PaidResource | undefined {
  const setup = x402SetupOf(ctx.config);
  const facilitator = facilitatorOf(ctx);
  if (!setup || !facilitator) return undefined;
  for (const micros of pricesMicros) priceInAtomicUnits(micros, setup.settings.decimals);
  return new PaidResource(ctx, setup, facilitator, resource);
}

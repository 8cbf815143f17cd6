/**
 * The public `charge` object: one shape in every answer that charges, and the
 * one schema OpenAPI documents it with.
 *
 *   { "sku": "execute_gate", "amount_usd": "0.10", "nap": false }
 *
 * `amount_usd` is whole cents, two decimals; `nap` is true for a negative-act
 * premium (a refusal). An answer that charges several SKUs lists them in
 * `charges`, each of this shape.
 */
import { z } from 'zod';
export { chargeView, type ChargeView } from '../domain/charge-rules.ts';

export const chargeSchema = z
  .object({
    sku: z.string().describe('the SKU charged (a toll of the Clear or foundry list, a NAP SKU, bps_fee, clear_bps or operator_checkout)'),
    amount_usd: z.string().describe('decimal USD with two decimals, e.g. "0.15"'),
    nap: z.boolean().describe('true for a negative-act premium (a refusal)'),
  })
  .describe('what this answer charged the calling key');

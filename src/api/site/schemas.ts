/** Field schemas shared by the companion-site metered routes. */
import { z } from 'zod';

/** A decimal USD amount as a string: exact, never a float, whole cents (money is charged and printed in cents). Bounded so micro-USD sums stay exact. */
export const usdAmount = z
  .string()
  .regex(/^\d{1,9}(\.\d{1,2})?$/, 'a decimal USD amount such as "1250.00" (at most 9 digits before the point and 2 after)');

/** An act kind, as the gate names them (one rule for case, src/catalog/surfaces.ts). */
export { actKindSchema as actKind } from '../../catalog/surfaces.ts';

/** A caller's opaque reference (job id, candidate id, graph id...): visible ASCII, no personal data please. */
export const ref = z.string().regex(/^[\x21-\x7e]{1,128}$/, '1 to 128 visible ASCII characters');

export const usdString = z.string().describe('decimal USD, e.g. "0.15"');

export { chargeSchema } from '../charge.ts';

export const receiptRef = { receipt_id: z.string(), verify_url: z.url() };

/** Every /scale answer: a projection, labelled illustrative. */
export const illustrative = { illustrative: z.literal(true), note: z.string() };

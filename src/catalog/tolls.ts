/**
 * Per-act tolls (SPEC part 8), read from the same content file the site is
 * built from (src/content/tolls.json): no toll is written twice.
 * `base` marks the base Clear catalog's list; the others are the foundry's additions.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { usdToMicros } from '../domain/money.ts';

export const tollSchema = z.object({
  sku: z.string().regex(/^[a-z0-9_]+$/),
  usd: z.number().nonnegative(),
  base: z.boolean(),
});
export type Toll = z.infer<typeof tollSchema>;

export const TOLLS: readonly Toll[] = z
  .array(tollSchema)
  .parse(JSON.parse(readFileSync(new URL('../content/tolls.json', import.meta.url), 'utf8')));

const bySku = new Map(TOLLS.map((t) => [t.sku, t]));

/** The toll of a SKU in micro-USD; throws for an unknown SKU (a bug, not bad input). */
export function tollMicros(sku: string): number {
  const t = bySku.get(sku);
  if (!t) throw new Error(`no toll is defined for SKU ${sku}`);
  return usdToMicros(t.usd);
}

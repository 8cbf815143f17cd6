/**
 * Per-act tolls (SPEC part 8), read from the same content file the site is
 * built from (src/content/tolls.json): no toll is written twice.
 * `base` marks the base Clear catalog's list; the others are the foundry's additions.
 */
import { usdToMicros } from './money.ts';
import { tollSchema, tollsSchema, type Toll } from './schemas.ts';
import tollsJson from '../content/tolls.json' with { type: 'json' };

export { tollSchema, type Toll };

export const TOLLS: readonly Toll[] = tollsSchema.parse(tollsJson);

const bySku = new Map(TOLLS.map((t) => [t.sku, t]));
/** Converted once: every metered act asks for its toll. */
const microsBySku = new Map(TOLLS.map((t) => [t.sku, usdToMicros(t.usd)]));

/** The toll of a SKU in micro-USD; throws for an unknown SKU (a bug, not bad input). */
export function tollMicros(sku: string): number {
  const micros = microsBySku.get(sku);
  if (micros === undefined) throw new Error(`no toll is defined for SKU ${sku}`);
  return micros;
}

/** The toll of a SKU in USD as the catalogs render it; throws for an unknown SKU. */
export function tollUsd(sku: string): number {
  const t = bySku.get(sku);
  if (!t) throw new Error(`no toll is defined for SKU ${sku}`);
  return t.usd;
}

/** `tolls_usd` of a catalog: the base Clear list, or every toll (the foundry's extended list). */
export function tollTable(which: 'base' | 'all'): Record<string, number> {
  return Object.fromEntries(TOLLS.filter((t) => which === 'all' || t.base).map((t) => [t.sku, t.usd]));
}

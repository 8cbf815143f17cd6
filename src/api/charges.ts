/**
 * Charges as declaration data. A route's declaration names the SKUs it
 * charges (`RouteDoc.charges`) and, for each SKU that is not a plain toll,
 * how it is charged (`RouteDoc.chargeRules`: a named amount rule or catalog
 * price of src/domain/charge-rules.ts, a NAP line). Every other SKU costs its fixed toll
 * from src/content/tolls.json. `billOf` reads that once, when the route is
 * registered, into the one function its handler bills with: a handler names
 * the SKU (and a rule's input), never a price, and cannot bill a SKU its
 * declaration does not state.
 *
 * @example
 *   operation(router, ctx, { method: 'POST', path: '/v1/classify', ..., charges: ['classify'], act: {} }, async ({ input, key, event, bill }) => {
 *     const charge = { keyId: key.id, ...bill('classify') };   // the toll of classify
 */
import { tollMicros } from '../catalog/tolls.ts';
import { AMOUNT_RULES, CATALOG_PRICES, isNapSku, type AmountInput, type BilledLine, type ChargeRule } from '../domain/charge-rules.ts';

export { isNapSku, type BilledLine, type ChargeRule } from '../domain/charge-rules.ts';

/** Bills a declared SKU: at its toll, or through its named rule with `input`. */
export type Bill = (sku: string, input?: AmountInput) => Readonly<BilledLine>;

/** A 2^53 bound on what one line may state (the ledger's counters are integers). */
const toLine = (sku: string, micros: bigint | number, nap: boolean): BilledLine => {
  const n = Number(micros);
  if (!Number.isSafeInteger(n) || n < 0)
    throw new Error(`charge ${sku}: ${String(micros)} micro-USD is not a whole amount a line can state`);
  return { sku, amountMicros: n, nap };
};

const hasToll = (sku: string): boolean => {
  try {
    tollMicros(sku);
    return true;
  } catch {
    return false;
  }
};

/**
 * The bill of a route declared with `charges` and `rules`; throws at
 * registration for a rule that does not exist or a rule for a SKU it does not
 * charge, and when billed for a SKU the route does not declare or cannot price.
 */
export function billOf(route: string, charges: readonly string[] = [], rules: Readonly<Record<string, ChargeRule>> = {}): Bill {
  const lines = new Map<string, (input?: AmountInput) => Readonly<BilledLine>>();
  for (const sku of charges) {
    const rule = rules[sku] ?? {};
    const nap = isNapSku(sku, rules);
    if (rule.amount !== undefined && rule.price !== undefined)
      throw new Error(`${route}: charge ${sku} names both an amount rule and a catalog price`);
    if (rule.price !== undefined) {
      const price = CATALOG_PRICES[rule.price] as ((sku: string) => bigint) | undefined;
      if (!price) throw new Error(`${route}: charge ${sku} names no known catalog price (${rule.price})`);
      // Read from its catalog once, at registration, like a toll.
      const fixed = Object.freeze(toLine(sku, price(sku), nap));
      lines.set(sku, () => fixed);
    } else if (rule.amount !== undefined) {
      const compute = AMOUNT_RULES[rule.amount] as ((i: AmountInput) => bigint) | undefined;
      if (!compute) throw new Error(`${route}: charge ${sku} names no known amount rule (${rule.amount})`);
      lines.set(sku, (input) => {
        if (input === undefined) throw new Error(`${route}: charge ${sku} (${rule.amount}) needs its input`);
        return toLine(sku, compute(input), nap);
      });
    } else if (hasToll(sku)) {
      // One frozen line per SKU: billing a toll allocates nothing.
      const fixed = Object.freeze(toLine(sku, tollMicros(sku), nap));
      lines.set(sku, () => fixed);
    } else {
      // Priced by its area's own data (a catalog's widget, a listing), not yet by a declared rule.
      lines.set(sku, () => {
        throw new Error(`${route}: charge ${sku} has no toll; declare its amount rule (RouteDoc.chargeRules)`);
      });
    }
  }
  for (const sku of Object.keys(rules)) if (!lines.has(sku)) throw new Error(`${route}: a rule for ${sku}, which it does not charge`);
  return (sku, input) => {
    const line = lines.get(sku);
    if (!line) throw new Error(`${route} bills ${sku}, which its declaration does not charge`);
    return line(input);
  };
}

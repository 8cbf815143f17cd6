/**
 * The resources that accept an x402 payment, read from the operations'
 * declarations (RouteDoc.x402, src/api/router.ts), each with the lines it may
 * charge priced as its declaration prices them (api/charges.ts): the one list
 * the routes take their prices from and every discovery document publishes.
 *
 * One rule prices every paid call (payments/x402/keyless.ts `priceOf`): the
 * charge lines of its act as decided for it, exactly what a key would be
 * charged for the same request. An operation with one price (`fixed`) states
 * it before the request is read; any other (several SKUs: a refusal's NAP, a
 * tier named in the body; or a SKU an amount rule prices) states the price of
 * each request in its 402.
 */
import { tollMicros } from '../../catalog/tolls.ts';
import { CATALOG_PRICES, isNapSku, type ChargeRule } from '../../domain/charge-rules.ts';
import type { X402Resource } from '../../domain/x402.ts';
import { formatUsd } from '../../catalog/money.ts';

/** What an operation declares about x402 payments (RouteDoc.x402): `false` takes none. */
export type X402Doc =
  | false
  | {
      /**
       * The one toll a payment pays, whatever the request (lookup: the hop toll; evaluate: the GO
       * toll, the only answer it settles). Without it, a payment pays the lines the act charges as
       * decided for it, listed at the first charge's price.
       */
      sku?: string;
      /** When a payment is taken instead of a key (default: without a key). */
      when?: string;
      /** The transfer rails the resource clears, as the catalogs list them (default: x402). */
      rails?: Array<'x402' | 'rtp'>;
      /** Not in SPEC's table of x402 resources: our documented extension (default true). */
      extension?: boolean;
      /**
       * A key past its hop limit may pay for this call too (our extension of SPEC 7: the hop-limit 402
       * carries the requirements); otherwise only a call without a key pays.
       */
      pastHopLimit?: boolean;
      /**
       * The answer statuses a payment is settled for (e.g. [200], only a GO); any other answer is
       * committed unpaid and the payment stays unused. Default: every act that commits is paid.
       */
      settlesOn?: readonly number[];
    };

/** What x402 reads of an operation's declaration (RouteDoc, src/api/router.ts, has it). */
export interface PricedOperation {
  summary: string;
  auth: string;
  role?: string | undefined;
  charges?: readonly string[] | undefined;
  chargeRules?: Readonly<Record<string, ChargeRule>> | undefined;
  x402?: X402Doc | undefined;
}

/** A line a paid operation may charge: its SKU, its price (null: computed from the request by a rule), NAP or not. */
export interface PriceLine {
  sku: string;
  micros: number | null;
  nap: boolean;
}

export interface PaidRoute {
  method: string;
  path: string;
  description: string;
  /** The listed price: the SKU of its usual answer (declared, else its first charge)... */
  sku: string;
  /** ...and its price in micro-USD (null when a rule prices it from each request: the ORN SHARP). */
  micros: number | null;
  /** One price whatever the request (stated before the request is read), or the price of each request as decided. */
  fixed: boolean;
  /** Every line it may charge (the listed one for an operation that charges none of its own). */
  lines: PriceLine[];
  /** When a payment is taken instead of a key. */
  when: string;
  /** The transfer rails the resource clears, as the catalogs list them. */
  rails: Array<'x402' | 'rtp'>;
  /** Not in SPEC's table of x402 resources: our documented extension. */
  extension: boolean;
}

/**
 * What an operation's declaration says a payment buys, or undefined when it
 * takes none: every metered operation an agent key performs (auth `key`, not
 * operator-only, with `charges`) takes x402 at the toll of its first charge,
 * unless its declaration says `x402: false` or names another price.
 */
export function paidRouteOf(method: string, path: string, doc: PricedOperation | undefined): PaidRoute | undefined {
  if (!doc || doc.x402 === false) return undefined;
  const metered = doc.auth === 'key' && doc.role !== 'operator' && (doc.charges?.length ?? 0) > 0;
  if (doc.x402 === undefined && !metered) return undefined;
  const x = doc.x402 ?? {};
  const sku = x.sku ?? doc.charges?.[0];
  if (!sku) throw new Error(`${method} ${path} takes x402 but names no toll to price it`);
  const micros = priceOf(sku, doc);
  const charged = doc.charges?.length ? doc.charges : [sku];
  const lines = charged.map((c) => ({ sku: c, micros: priceOf(c, doc), nap: isNapSku(c, doc.chargeRules) }));
  // Declared with its one price, or charging one SKU at one price: the same price for every request.
  const fixed = micros !== null && (x.sku !== undefined || (lines.length === 1 && lines[0]!.micros !== null));
  return {
    method,
    path,
    description: doc.summary,
    sku,
    micros,
    fixed,
    lines,
    when: x.when ?? 'without an API key',
    rails: x.rails ?? ['x402'],
    extension: x.extension ?? true,
  };
}

/** A SKU's price: the catalog price its declaration names (RouteDoc.chargeRules), null for an amount rule, else its toll. */
function priceOf(sku: string, doc: PricedOperation): number | null {
  const rule = doc.chargeRules?.[sku];
  if (rule?.amount) return null;
  return rule?.price ? Number(CATALOG_PRICES[rule.price](sku)) : tollMicros(sku);
}

/** The prices a route may ask that must convert exactly into the asset's units: its listed ones, and a cent (the unit of every computed charge). */
export const pricesToConvert = (r: PaidRoute): number[] => r.lines.map((l) => l.micros ?? CENT_MICROS);
const CENT_MICROS = 10_000;

/** Every operation that takes x402, in the order the routes were declared. */
export function paidRoutes(routes: readonly { method: string; path: string; doc?: PricedOperation | undefined }[]): PaidRoute[] {
  return routes.flatMap((r) => paidRouteOf(r.method, r.path, r.doc) ?? []);
}

/** The price of an operation with one price (`fixed`); throws for one priced per request. */
export function fixedMicros(r: PaidRoute): number {
  if (!r.fixed || r.micros === null) throw new Error(`${r.method} ${r.path} is priced per request, not at one price`);
  return r.micros;
}

export function resourceOf(baseUrl: string, r: PaidRoute): X402Resource {
  return { url: baseUrl + r.path, description: r.description, mimeType: 'application/json' };
}

/** A listed price as the catalogs show it (null: priced from each request by a rule). */
const usdOf = (micros: number | null): string | null => (micros === null ? null : formatUsd(micros));

/**
 * How the API description and the discovery documents list what a paid route
 * costs: its listed price, whether that is the price of every request
 * (`per_operation`) or each request's 402 states its own (`per_request`),
 * and then every line it may charge (a null price: computed from the request).
 */
export function priceListing(r: PaidRoute) {
  return {
    sku: r.sku,
    usd: usdOf(r.micros),
    priced: r.fixed ? ('per_operation' as const) : ('per_request' as const),
    ...(r.fixed ? {} : { lines: r.lines.map((l) => ({ sku: l.sku, usd: usdOf(l.micros), nap: l.nap })) }),
    when: r.when,
  };
}

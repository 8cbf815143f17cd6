/**
 * The resources that accept an x402 payment, read from the operations'
 * declarations (RouteDoc.x402, src/api/router.ts), each priced by a toll
 * (src/content/tolls.json): the one list the routes take their price from and
 * every discovery document publishes.
 */
import { tollMicros } from '../../catalog/tolls.ts';
import { CATALOG_PRICES, type CatalogPrice } from '../../domain/charge-rules.ts';
import type { X402Resource } from '../../domain/x402.ts';
import { formatUsd } from '../../catalog/money.ts';

/** What an operation declares about x402 payments (RouteDoc.x402): `false` takes none. */
export type X402Doc =
  | false
  | {
      /** The toll a payment pays (default: the operation's first charge). */
      sku?: string;
      /** The price in micro-USD, for a SKU priced by its catalog rather than the toll table. */
      micros?: number;
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
  chargeRules?: Record<string, { price?: CatalogPrice | undefined }> | undefined;
  x402?: X402Doc | undefined;
}

export interface PaidRoute {
  method: string;
  path: string;
  description: string;
  /** The toll whose price a payment pays. */
  sku: string;
  /** Its price in micro-USD. */
  micros: number;
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
  return {
    method,
    path,
    description: doc.summary,
    sku,
    micros: x.micros ?? priceOf(sku, doc),
    when: x.when ?? 'without an API key',
    rails: x.rails ?? ['x402'],
    extension: x.extension ?? true,
  };
}

/** A SKU's price: the catalog price its declaration names (RouteDoc.chargeRules), else its toll. */
function priceOf(sku: string, doc: PricedOperation): number {
  const price = doc.chargeRules?.[sku]?.price;
  return price ? Number(CATALOG_PRICES[price](sku)) : tollMicros(sku);
}

/** Every operation that takes x402, in the order the routes were declared. */
export function paidRoutes(routes: readonly { method: string; path: string; doc?: PricedOperation | undefined }[]): PaidRoute[] {
  return routes.flatMap((r) => paidRouteOf(r.method, r.path, r.doc) ?? []);
}

export const priceMicros = (r: PaidRoute): number => r.micros;

export function resourceOf(baseUrl: string, r: PaidRoute): X402Resource {
  return { url: baseUrl + r.path, description: r.description, mimeType: 'application/json' };
}

export const priceUsd = (r: PaidRoute): string => formatUsd(priceMicros(r));

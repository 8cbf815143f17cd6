/**
 * The resources that accept an x402 payment, each priced by a toll (src/content/tolls.json):
 * the one list the routes take their price from and every discovery document publishes.
 */
import { tollMicros } from '../../catalog/tolls.ts';
import type { X402Resource } from '../../domain/x402.ts';
import { formatUsd } from '../../domain/money.ts';
import { meteringOf } from '../../domain/prefinality.ts';

export interface PaidRoute {
  method: 'POST' | 'GET';
  path: string;
  description: string;
  /** The toll whose price a payment pays. */
  sku: string;
  /** When a payment is taken instead of a key. */
  when: string;
  /** The transfer rails the resource clears, as the catalogs list them. */
  rails: Array<'x402' | 'rtp'>;
  /** Not in SPEC's table of x402 resources: our documented extension. */
  extension: boolean;
}

export const PAID_ROUTES: readonly PaidRoute[] = [
  {
    method: 'POST',
    path: '/v1/prefinality/evaluate',
    description: 'Pre-finality GO / NO-GO / HOLD decision before an irreversible commit, with a signed JWT receipt.',
    // SPEC 5.4: the price is the GO toll; only a GO is settled.
    sku: meteringOf('GO').sku,
    when: 'no API key; settled only when the decision is GO',
    rails: ['x402', 'rtp'],
    extension: false,
  },
];

export function paidRoute(path: string): PaidRoute {
  const r = PAID_ROUTES.find((p) => p.path === path);
  if (!r) throw new Error(`no paid route ${path}`);
  return r;
}

export const priceMicros = (r: PaidRoute): number => tollMicros(r.sku);

export function resourceOf(baseUrl: string, r: PaidRoute): X402Resource {
  return { url: baseUrl + r.path, description: r.description, mimeType: 'application/json' };
}

export const priceUsd = (r: PaidRoute): string => formatUsd(priceMicros(r));

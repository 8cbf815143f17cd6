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
  // Our extension (SPEC 7 answers 402 at the hop limit): a hop or lookup paid per call by a key past its
  // limit, or by an agent without a key (which sees only the public drill fuses, like the demos).
  // A lookup counts as a hop, so it costs the hop toll.
  // Not the OCSP alias: it must answer "halt" within OCSP_HALT_AFTER_MS, which a settlement cannot promise.
  ...(['/v1/fuse/hop', '/v1/fuse/lookup'] as const).map(
    (path): PaidRoute => ({
      method: path === '/v1/fuse/hop' ? 'POST' : 'GET',
      path,
      description:
        path === '/v1/fuse/hop'
          ? 'Fuse hop: may the agent act right now? A signed receipt naming the payment.'
          : 'Fuse lookup: the state of a fuse, with a receipt naming the payment.',
      sku: 'execute_gate',
      when: "past the key's hop limit, or without a key (public drill fuses only)",
      rails: ['x402'],
      extension: true,
    }),
  ),
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

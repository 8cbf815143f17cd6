/**
 * x402 discovery, served live so that every document states what the running
 * configuration does (not what the build assumed):
 *   GET /.well-known/x402.json        gate discovery document (SPEC 4.1)
 *   GET /.well-known/x402             companion x402 resource catalog (SPEC 4.2)
 *   GET /.well-known/x402-bazaar.json companion bazaar listing (SPEC 4.2)
 * and the background job that reconciles payments a crash or a settle timeout left settling.
 */
import { catalogByKey } from '../catalog/catalogs.ts';
import { discoveryDocument } from '../catalog/discovery.ts';
import { priceInAtomicUnits } from '../domain/x402.ts';
import { reconcileX402Payments } from '../payments/x402/reconcile.ts';
import { paidRoutes, priceListing } from '../payments/x402/resources.ts';
import { facilitatorOf } from '../payments/x402/service.ts';
import { x402SetupOf } from '../payments/x402/settings.ts';
import type { AppContext } from './context.ts';
import { intervalJob } from './jobs.ts';
import { reply, toResponse } from './reply.ts';
import type { Router } from './router.ts';
import { operation } from './operation.ts';

/** The paid resources as the catalogs list them, from the operations' declarations: empty when x402 is off. */
export function paidResourceList(ctx: AppContext, router: Router) {
  const setup = x402SetupOf(ctx.config);
  if (!setup) return [];
  const s = setup.settings;
  return paidRoutes(router.routes).map((r) => {
    const { usd, sku, when, ...priced } = priceListing(r);
    return {
      resource: ctx.config.BASE_URL + r.path,
      method: r.method,
      rails: r.rails,
      description: r.description,
      price: {
        sku,
        usd,
        amount: r.micros === null ? null : priceInAtomicUnits(r.micros, s.decimals),
        asset: s.asset,
        network: s.network,
        pay_to: s.payTo,
        scheme: 'exact',
      },
      ...priced,
      when,
      ...(r.extension ? { extension: true } : {}),
    };
  });
}

export function registerX402Routes(router: Router, ctx: AppContext): void {
  const urls = { gate: ctx.config.BASE_URL, site: ctx.config.SITE_URL };
  const setup = x402SetupOf(ctx.config);
  const configured = setup !== undefined;
  // When x402 is off the catalogs keep their built note (src/content/catalogs/x402*.json).
  const note = setup
    ? `x402_configured is true: the resources listed accept an x402 payment (scheme exact, ${setup.settings.network}) at the price shown; an API key still works.`
    : undefined;
  const cors = { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=60' };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/.well-known/x402.json',
      summary: 'x402 resource catalog: whether payments are taken, and what each paid resource costs',
      auth: 'public',
      tag: 'discovery',
    },
    () => {
      const doc = discoveryDocument('x402', urls);
      return toResponse(
        reply({
          ...doc,
          x402_configured: configured,
          ...(configured
            ? {
                rules: [
                  'x402_configured is true: a call without an API key pays per call with an x402 payment (PAYMENT-SIGNATURE, or X-PAYMENT for v1).',
                  'The 402 answer carries the payment requirements; the paid answer carries PAYMENT-RESPONSE with the settlement.',
                  "Without a key or a payment, every listed resource answers 402 with its own requirements: a resource priced per_operation before its body is read, at its listed price; one priced per_request once its body is read and its act decided (a bad body is a 400), at that request's price, which is what its lines charge as decided (a refusal its NAP).",
                  'Pay exactly the amount of the 402 (scheme exact): an authorization for more or less is refused, and the price of a paid answer is what its charge (or charges) shows.',
                ],
              }
            : {}),
          resources: paidResourceList(ctx, router),
        }),
        cors,
      );
    },
  );

  for (const key of ['x402', 'x402_bazaar'] as const) {
    const entry = catalogByKey(key);
    operation(
      router,
      ctx,
      {
        method: 'GET',
        path: entry.path,
        name: `${key}_catalog`,
        summary: key === 'x402' ? 'Companion x402 resource catalog (live configuration)' : 'x402 bazaar listing (live configuration)',
        auth: 'public',
        tag: 'discovery',
      },
      () => {
        const built = entry.build(urls) as Record<string, unknown>;
        const list = key === 'x402' ? 'resources' : 'listings';
        return toResponse(
          reply({ ...built, x402_configured: configured, note: note ?? built.note, [list]: paidResourceList(ctx, router) }),
          cors,
        );
        // Named by its catalog: the rule would name /.well-known/x402 as /.well-known/x402.json above.
      },
    );
  }

  // Payments a crash or a settle timeout left settling are finished in the background (also after a restart).
  const facilitator = facilitatorOf(ctx);
  if (facilitator) {
    const after = ctx.config.X402_RECONCILE_AFTER_SECONDS;
    router.job(
      intervalJob(ctx, 'x402 reconciliation', Math.max(1, after) * 1000, async () => {
        await reconcileX402Payments(ctx, facilitator, after);
      }),
    );
  }
}

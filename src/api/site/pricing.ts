/**
 * GET /api/v1/pricing (our extension): the complete price list of
 * src/catalog/pricing-table.ts, with this service's OPERATOR_FLOOR_USD and
 * SALES_CONTACT (for the prices sold by contact).
 */
import { pricingTable } from '../../catalog/pricing-table.ts';
import { salesContactOf } from '../../urls.ts';
import type { AppContext } from '../context.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

export function registerPricingRoutes(router: Router, ctx: AppContext): void {
  const body = pricingTable({ operatorFloorUsd: ctx.config.OPERATOR_FLOOR_USD, salesContact: salesContactOf(ctx.config) });
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/pricing',
      summary:
        "The complete price list (tolls, bps tiers, settlement, NAP, layer fees, clearing, relay, diligence, operator formula with this service's floor); each price names the endpoint that charges it, or the contact that sells it",
      auth: 'public',
      tag: 'system',
    },
    () => reply(body, 200, { 'cache-control': 'public, max-age=300', 'access-control-allow-origin': '*' }),
  );
}

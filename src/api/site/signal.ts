/**
 * Signal: the pattern feed with mandate overage (SPEC 2.4 stack step 5; our design, docs/premium-acts.md):
 *   POST /signal/mandates        key   a mandate: a standing watch of a pattern metric; past the included count, mandate_overage 3.00
 *   GET  /signal/patterns.json   key   the pattern feed of the account's mandates: triggers armed and fired on each metric, network-wide
 */
import { z } from 'zod';
import { metricSchema } from './oracle.ts';
import { newId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { countMandates, insertMandate, mandatesOf, metricPattern } from '../../ledger/signal.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

export const OVERAGE_SKU = 'mandate_overage';
const WINDOW_DAYS = 30;

export const mandateRequest = z.strictObject({ metric: metricSchema.describe('the pattern metric to watch (a trigger threshold metric)') });
const mandateResponse = z.looseObject({
  object: z.literal('signal_mandate'),
  mandate_id: z.string(),
  metric: z.string(),
  overage: z.boolean(),
  included: z.number(),
  charge: chargeSchema.nullable(),
  receipt_id: z.string(),
});

export function registerSignalRoutes(router: Router, ctx: AppContext): void {
  const included = ctx.config.SIGNAL_INCLUDED_MANDATES;
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/signal/mandates',
      auth: 'key',
      summary: `A Signal mandate (an operator key): a standing watch of a pattern metric on the pattern feed; the platform includes SIGNAL_INCLUDED_MANDATES per account, each one past them is charged mandate_overage once`,
      tag: 'triggers',
      role: 'operator',
      body: mandateRequest,
      response: mandateResponse,
      responses: { 201: { description: 'The mandate, registered', schema: mandateResponse } },
      charges: [OVERAGE_SKU],
      chargeRules: { [OVERAGE_SKU]: { price: 'mandate_overage' } },
      x402: false,
      example: { metric: 'model_drift_score' },
      act: {},
    },
    async ({ input: b, key, event, bill }) =>
      commitAct(event, ctx, key, {
        run: async (tx, state) => {
          // Counted under the write lock: of two concurrent mandates, one is the (n+1)th.
          const held = await countMandates(tx, ownerId(key));
          const overage = held >= included;
          const line = overage ? { keyId: key.id, ...bill(OVERAGE_SKU) } : undefined;
          const id = newId('mdt');
          const receipt = state.receipt(
            ctx,
            {
              kind: 'signal_mandate',
              decision: overage ? 'OVERAGE' : 'INCLUDED',
              subject: id,
              key_id: key.id,
              data: { metric: b.metric, ordinal: held + 1, included },
            },
            line ? { charges: [line] } : {},
          );
          await insertMandate(tx, {
            id,
            accountId: ownerId(key),
            metric: b.metric,
            overage,
            receiptId: receipt.receipt_id,
            createdAt: nowIso(),
          });
          return {
            writes: { receipt },
            reply: reply(
              {
                object: 'signal_mandate',
                mandate_id: id,
                metric: b.metric,
                ordinal: held + 1,
                included,
                overage,
                charge: line ? chargeView(line) : null,
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
              },
              201,
            ),
          };
        },
      }),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/signal/patterns.json',
      summary:
        "The pattern feed of the account's mandates: for each watched metric, the triggers published and fired on it network-wide in the last 30 days (no account named)",
      auth: 'key',
      tag: 'triggers',
    },
    async ({ key }) => {
      const since = new Date(Date.now() - WINDOW_DAYS * 86_400_000).toISOString();
      const mandates = await mandatesOf(ctx.ledger.read, ownerId(key));
      const metrics = [...new Set(mandates.map((m) => m.metric))];
      const patterns = await Promise.all(
        metrics.map(async (metric) => ({ metric, ...(await metricPattern(ctx.ledger.read, metric, since)) })),
      );
      return reply({ object: 'signal_patterns', window_days: WINDOW_DAYS, since, mandates: mandates.length, included, patterns });
    },
  );
}

/**
 * POST /api/v1/oracle/aggregate (SPEC 2.5 foundry layer 3): readings from the
 * catalog's five sources, their weights, a weighted trimmed mean and the
 * DISPUTED guard (src/domain/oracle.ts). The result is sealed: a receipt over
 * it, and its row recorded with the group's (ledger/records.ts), in one
 * transaction. Its aggregate_id can then fire a trigger
 * (POST /api/v1/foundry/trigger/fire).
 */
import { record } from '../../ledger/records.ts';
import { ORACLE_AGGREGATES } from '../../ledger/oracle.ts';
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { chargeSchema, chargeView } from '../charge.ts';
import { DATA } from '../../catalog/catalogs.ts';
import { aggregate, type OraclePolicy } from '../../domain/oracle.ts';
import type { Config } from '../../config.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import type { AppContext } from '../context.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

export const SOURCES = DATA.foundry.oracle.sources;
const sourceIds = SOURCES.map((s) => s.source_id) as [string, ...string[]];

export const decimalSchema = z.string().regex(/^-?\d{1,15}(\.\d{1,6})?$/, 'a decimal string such as "101.25" (up to 6 decimals)');
export const metricSchema = z.string().regex(/^[a-z0-9_.:-]{1,64}$/, 'a metric name such as "model_drift_score"');

export const aggregateRequest = z.strictObject({
  metric: metricSchema.describe('what the readings measure; a trigger fired with this aggregate must watch the same metric'),
  readings: z
    .array(
      z.strictObject({
        source_id: z.enum(sourceIds).describe('one of the foundry catalog oracle sources'),
        value: decimalSchema,
        observed_at: z.iso.datetime().optional(),
      }),
    )
    .min(1)
    .max(SOURCES.length)
    .refine((rs) => new Set(rs.map((r) => r.source_id)).size === rs.length, { message: 'each source may give one reading' }),
});

export const aggregateResponse = z.object({
  aggregate_id: z.string(),
  metric: z.string(),
  status: z.enum(['CONSENSUS', 'DISPUTED']),
  value: z.string().nullable().describe('the weighted trimmed mean; null when DISPUTED'),
  reason: z.string().optional(),
  spread: z.string().nullable(),
  kept: z.array(z.object({ source_id: z.string(), value: z.string(), weight: z.number() })),
  trimmed: z.array(z.object({ source_id: z.string(), value: z.string() })),
  sources: z.number().int().describe('readings received'),
  trim_per_side: z.number().int().describe('readings trimmed at each end'),
  policy: z
    .object({ min_sources: z.number().int(), trim_percent: z.number().int(), tolerance_bps: z.number().int() })
    .describe('the operator policy applied (ORACLE_*)'),
  receipt_id: z.string(),
  verify_url: z.string(),
  charge: chargeSchema,
});

/** The aggregation policy the operator configured (ORACLE_*). */
export function oraclePolicy(c: Config): OraclePolicy {
  return { minSources: c.ORACLE_MIN_SOURCES, trimPercent: c.ORACLE_TRIM_PERCENT, toleranceBps: c.ORACLE_TOLERANCE_BPS };
}

export function registerOracleRoutes(router: Router, ctx: AppContext): void {
  const policy = oraclePolicy(ctx.config);
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/oracle/aggregate',
      auth: 'key',
      tool: 'oracle_aggregate',
      summary: 'Aggregate oracle readings: weighted trimmed mean with a DISPUTED guard; the result is sealed as a receipt',
      tag: 'foundry',
      body: aggregateRequest,
      response: aggregateResponse,
      problems: [409, 422],
      charges: ['oracle_aggregate'],
      example: {
        metric: 'model_drift_score',
        readings: [
          { source_id: 'network_a', value: '100' },
          { source_id: 'network_b', value: '101' },
          { source_id: 'network_c', value: '102' },
          { source_id: 'first_party', value: '103' },
          { source_id: 'sealed_reading', value: '150' },
        ],
      },
      act: { lane: true },
    },
    async ({ input: body, key, event, bill }) => {
      const result = aggregate(body.readings, SOURCES, policy);
      const id = newSortableId('agg');
      const line = bill('oracle_aggregate');
      return commitAct(event, ctx, key, {
        decide(state) {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'oracle_aggregate',
              decision: result.status,
              subject: id,
              key_id: key.id,
              data: { metric: body.metric, readings: body.readings, ...result },
            },
            { charges: [{ keyId: key.id, ...line }] },
          );
          const aggregate = {
            id,
            key_id: ownerId(key),
            metric: body.metric,
            status: result.status,
            value: result.value,
            receipt_id: receipt.receipt_id,
            created_at: nowIso(),
          };
          return {
            writes: { receipt, records: [record(ORACLE_AGGREGATES, aggregate)] },
            reply: reply({
              aggregate_id: id,
              metric: body.metric,
              ...result,
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
              charge: chargeView(line),
            }),
          };
        },
      });
    },
  );
}

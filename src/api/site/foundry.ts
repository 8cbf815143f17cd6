/**
 * The foundry pipeline and per-tenant projection (SPEC 2.5, 4.2):
 *   POST /api/v1/foundry/pipeline/run             key, foundry_pipeline 0.35   a sealed rehearsal of the attach flow
 *   GET  /api/v1/foundry/projection/{tenant_id}   key                          the tenant's runs and an illustrative projection
 *   GET  /api/v1/foundry/catalog.json             public                       the catalog, recent_settlements live
 * What a run computes, step by step, is in src/domain/foundry.ts.
 */
import { record } from '../../ledger/records.ts';
import { z } from 'zod';
import { runPipeline, tenantProjection } from '../../domain/foundry.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { latestTenantRun, tenantRunCounts, FOUNDRY_RUNS } from '../../ledger/foundry.ts';
import { readSession } from '../../ledger/inference.ts';
import { verifyUrl } from '../../ledger/receipts.ts';
import { recentFires } from '../../ledger/triggers.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { generateRequest, receiptsLogUrls } from './conformity.ts';
import { liveCatalog } from './live-catalog.ts';
import { chargeView, meteredAct, receiptFields } from './metered.ts';
import { aggregateRequest, oraclePolicy } from './oracle.ts';
import { projectionResponse } from './scale.ts';
import { actKind, chargeSchema, receiptRef, ref, usdAmount } from './schemas.ts';
import { TEMPLATES, thresholdSchema } from './triggers.ts';
import { operation } from '../operation.ts';

export const pipelineRequest = z.strictObject({
  tenant_id: ref.describe('your name for the tenant the flow is attached for'),
  act: z.strictObject({ kind: actKind }).default({ kind: 'pay' }).describe('step 1: the governed act the run seals'),
  inference_session_id: ref
    .optional()
    .describe('step 2 (optional): an inference session of this key, sealed by /api/v1/inference/chat/completions'),
  readings: aggregateRequest.shape.readings.optional().describe('step 3: oracle readings'),
  template_id: z
    .enum(TEMPLATES.map((t) => t.template_id) as [string, ...string[]])
    .optional()
    .describe('step 4: the trigger template to arm'),
  threshold: thresholdSchema.optional().describe('step 5: when the armed trigger fires'),
  exposure_usd: usdAmount.optional().describe('step 5: the exposure a fire enables, charged fee_bps'),
  conformity: generateRequest.optional().describe('step 6: the conformity pack to generate'),
  asset: z
    .strictObject({ asset_id: ref, units: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), custodian: ref.optional() })
    .optional()
    .describe('step 7: the asset to tokenize'),
});

const stepSchema = z.object({
  step: z.number(),
  layer: z.string(),
  outcome: z.string(),
  status: z.enum(['done', 'skipped', 'held']),
  detail: z.record(z.string(), z.unknown()),
  next: z.object({ method: z.string(), path: z.string() }).nullable(),
});
export const pipelineResponse = z.object({
  run_id: z.string(),
  tenant_id: z.string(),
  status: z.enum(['complete', 'partial']).describe('complete: every step done (print is optional)'),
  steps: z.array(stepSchema).length(9),
  charge: chargeSchema,
  ...receiptRef,
});

const projectionQuery = z.object({
  runs_per_month: z.coerce.number().int().min(1).max(1_000_000_000).optional().describe("default: the tenant's runs in the last 30 days"),
});
export const tenantProjectionResponse = z.object({
  tenant_id: z.string(),
  runs: z.number(),
  runs_last_30_days: z.number(),
  first_run_at: z.string(),
  last_run: z.object({ run_id: z.string(), status: z.string(), created_at: z.string(), done: z.array(z.string()), receipt_id: z.string() }),
  projection: projectionResponse,
});

const DAY_MS = 86_400_000;
/** How many of the newest trigger fires the foundry catalog lists as recent_settlements. */
export const RECENT_SETTLEMENTS = 20;

export function registerFoundryRoutes(router: Router, ctx: AppContext): void {
  liveCatalog(
    router,
    ctx,
    { path: '/api/v1/foundry/catalog.json', catalog: 'foundry' },
    async () => ({
      recent_settlements: (await recentFires(ctx.ledger.read, RECENT_SETTLEMENTS)).map((t) => {
        const fire = t.fire as { reading?: string; fee?: Record<string, unknown>; receipt_id?: string } | null;
        return {
          trigger_id: t.id,
          template_id: t.template_id,
          fired_at: t.fired_at,
          reading: fire?.reading ?? null,
          fee: fire?.fee ?? null,
          receipt_id: fire?.receipt_id ?? null,
          verify_url: fire?.receipt_id ? verifyUrl(ctx, fire.receipt_id) : null,
        };
      }),
    }),
    {
      summary: `The foundry catalog (svc-actuation-foundry-v1) with recent_settlements: the ${RECENT_SETTLEMENTS} newest trigger fires, newest first`,
      auth: 'public',
      tag: 'foundry',
    },
  );

  const policy = oraclePolicy(ctx.config);

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/foundry/pipeline/run',
      auth: 'key',
      tool: 'foundry_pipeline_run',
      summary:
        "Runs the foundry attach flow (steps 1 to 9) for a tenant as a sealed rehearsal: each step computed with its endpoint's rules and reported done, skipped or held, with the endpoint that performs it",
      tag: 'foundry',
      body: pipelineRequest,
      response: pipelineResponse,
      problems: [],
      charges: ['foundry_pipeline'],
      example: {
        tenant_id: 'acme-mga',
        readings: [
          { source_id: 'network_a', value: '0.82' },
          { source_id: 'network_b', value: '0.80' },
          { source_id: 'sealed_reading', value: '0.81' },
        ],
        template_id: 'ai_model_change',
        threshold: { metric: 'model_drift_score', operator: 'gte', value: '0.75' },
        exposure_usd: '250000.00',
        asset: { asset_id: 'US0378331005', units: 1000, custodian: 'custodian-a' },
      },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      let inference;
      if (b.inference_session_id !== undefined) {
        const session = await readSession(ctx.ledger.read, ownerId(key), b.inference_session_id);
        inference = session ? { session_id: b.inference_session_id, size: session.size, root: session.root } : null;
      }
      const at = nowIso();
      const run = runPipeline({ ...b, inference }, { oraclePolicy: policy, generatedAt: at, log: receiptsLogUrls(ctx) });
      const runId = newSortableId('run');
      const charge = bill('foundry_pipeline');
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'foundry_pipeline',
          decision: run.status.toUpperCase(),
          subject: b.tenant_id,
          fingerprint: fingerprint(run),
          data: { run_id: runId, steps: run.steps.map((s) => `${s.layer}:${s.status}`) },
        },
        [charge],
        (receipt) => ({
          record: record(FOUNDRY_RUNS, {
            id: runId,
            owner: ownerId(key),
            tenantId: b.tenant_id,
            report: run,
            receiptId: receipt.receipt_id,
            createdAt: at,
          }),
          reply: reply({ run_id: runId, tenant_id: b.tenant_id, ...run, charge: chargeView(charge), ...receiptFields(receipt) }),
        }),
        // The tenant is the caller's name for its customer: the public entry holds a commitment (docs/public-log.md).
        { commit: ['subject'] },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/foundry/projection/:tenant_id',
      tool: 'foundry_projection',
      summary:
        "A tenant's pipeline runs and an illustrative monthly projection: each step its last run did, at the step's toll, times the runs per month",
      auth: 'key',
      tag: 'foundry',
      query: projectionQuery,
      response: tenantProjectionResponse,
      problems: [404],
    },
    async ({ key, input: q, params }) => {
      const tenant = params.tenant_id ?? '';
      const since = nowIso(new Date(Date.now() - 30 * DAY_MS));
      const counts = await tenantRunCounts(ctx.ledger.read, ownerId(key), tenant, since);
      if (!counts)
        throw notFound(`no pipeline run for tenant ${tenant} in this account: POST /api/v1/foundry/pipeline/run first`, 'unknown_tenant');
      const row = (await latestTenantRun(ctx.ledger.read, ownerId(key), tenant))!;
      const last = row.report as ReturnType<typeof runPipeline>;
      const done = last.steps.filter((s) => s.status === 'done').map((s) => s.layer);
      const recent = counts.recent;
      return reply({
        tenant_id: tenant,
        runs: counts.runs,
        runs_last_30_days: recent,
        first_run_at: counts.first_at,
        last_run: { run_id: row.id, status: last.status, created_at: row.created_at, done, receipt_id: row.receipt_id },
        projection: tenantProjection(tenant, last.steps, q.runs_per_month ?? Math.max(1, recent)),
      });
    },
  );
}

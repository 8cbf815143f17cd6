/**
 * The trigger rail (SPEC 2.5 layers 2, 4, 7; SPEC 3 trigger row; SPEC 6):
 *   POST /signal/trigger/publish        key, trigger_publish   arm an obligation from a template (ARMED)
 *   POST /api/v1/foundry/trigger/fire   key, bps_fire + fee    ARMED -> FIRED once, when the threshold is reached
 *   GET  /signal/trigger/feed.json      public                 the `triggers` log, paged, with its signed checkpoint
 *   GET  /signal/trigger-oracle         public                 how oracle readings drive fires
 * Every publish and fire is an event in the `triggers` log and a webhook
 * delivery to each matching subscriber, in the transaction of the act.
 */
import { record } from '../../ledger/records.ts';
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { DATA } from '../../catalog/catalogs.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { OPERATORS, fireFee, obligationFeeBps, thresholdReached, type FireFee } from '../../domain/trigger.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { getAggregate } from '../../ledger/oracle.ts';
import { leafBytes } from '../../ledger/astl.ts';
import {
  TRIGGERS_LOG,
  firedExposureSince,
  getTrigger,
  markFired,
  newEventId,
  recordEvent,
  type Trigger,
  type TriggerEvent,
  PUBLISHED_TRIGGERS,
} from '../../ledger/triggers.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { escapeHtml, htmlPage, htmlResponse, wantsHtml } from '../html.ts';
import {
  checkpointSchema,
  feedPage,
  feedQuery,
  inclusionSchema,
  proofAnswer,
  provedAtGroupEnd,
  withCheckpointNote,
} from './log-answers.ts';
import { decimalSchema, metricSchema } from './oracle.ts';
import { nudgeDeliverer } from './webhooks.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import { usdAmount } from './schemas.ts';
import { operation } from '../operation.ts';

export const TEMPLATES = DATA.foundry.trigger_templates;
const templateIds = TEMPLATES.map((t) => t.template_id) as [string, ...string[]];
/**
 * A trigger without a template (our extension): the caller states the whole
 * obligation surface; it carries no fee_bps of its own, so its fire settles at
 * the Clear bps tier, SPEC 2.5 layer 7's fallback (docs/pricing.md).
 */
export const CUSTOM_TEMPLATE = 'custom';
const CUSTOM_ACTIONS = [...new Set(TEMPLATES.flatMap((t) => t.obligation_surface.callable_actions))];
const CUSTOM_CEILING_USD = Math.max(...TEMPLATES.map((t) => t.obligation_surface.exposure_ceiling_usd));

/** The fee_bps an obligation of this template carries: the template's; none (null) for a custom one. */
export function templateFeeBps(templateId: string): number | null {
  return TEMPLATES.find((t) => t.template_id === templateId)?.obligation_surface.fee_bps ?? null;
}
/** SKU of the bps fee on enabled exposure (the amount is computed, not a toll). */
export const FEE_SKU = 'bps_fee';

export const thresholdSchema = z
  .strictObject({
    metric: metricSchema,
    operator: z.enum(OPERATORS).describe('fires when reading <operator> value: gte, gt, lte, lt, eq'),
    value: decimalSchema,
  })
  .describe('our threshold condition (SPEC leaves it open): a metric, an operator and a decimal value');

/**
 * An obligation's exposure ceiling: a decimal USD string like every other amount ("5000000" or
 * "5000000.00"), or, as the API accepted before, a whole JSON number. The ceiling is whole USD, as
 * the catalog's templates state it (SPEC 2.5), so it stays a whole number in the obligation surface.
 */
const ceilingUsd = z
  .union([
    usdAmount
      .refine(
        (s) => /^\d+(\.0{1,2})?$/.test(s),
        'an exposure ceiling is whole USD, as the templates state it (e.g. "5000000" or "5000000.00")',
      )
      .transform((s) => Number(s.split('.')[0])),
    z.number().int('a JSON number ceiling must be whole USD (or send a decimal string such as "5000000.00")'),
  ])
  .refine((n) => n > 0, 'must be more than 0')
  .describe(
    'at most the template\'s exposure_ceiling_usd; a decimal USD string in whole dollars ("5000000.00"), or a whole JSON number (accepted as before)',
  );

export const publishRequest = z.strictObject({
  template_id: z
    .enum([...templateIds, CUSTOM_TEMPLATE])
    .describe(
      `a trigger template of the foundry catalog, or "${CUSTOM_TEMPLATE}": an obligation stated whole by the caller (callable_actions and exposure_ceiling_usd required), without a fee_bps of its own, whose fire settles at the Clear bps tier`,
    ),
  threshold: thresholdSchema,
  obligation: z
    .strictObject({
      callable_actions: z.array(z.string()).min(1).optional().describe("a subset of the template's callable_actions"),
      exposure_ceiling_usd: ceilingUsd.optional(),
      fee_bps: z
        .number()
        .min(0)
        .max(10000)
        .nullable()
        .optional()
        .describe(
          "the template's fee_bps, restated (optional); any other value is refused with 422 fee_bps_fixed: a caller cannot set its own fee",
        ),
    })
    .optional(),
  enabled_exposure_usd: usdAmount
    .optional()
    .describe(
      'the exposure a fire enables and is charged bps on, at most the exposure ceiling; default 0.00: a fire then charges bps_fire and a 0.00 bps_fee, never a fee on the ceiling nobody stated',
    ),
  label: z.string().min(1).max(200).optional(),
});

export const fireRequest = z
  .strictObject({
    trigger_id: z.string().regex(/^trg_[A-Za-z0-9_-]{1,64}$/, 'a trigger id such as trg_…'),
    reading: decimalSchema.optional().describe("a reading of the threshold's metric"),
    aggregate_id: z
      .string()
      .regex(/^agg_[A-Za-z0-9_-]{1,64}$/, 'an oracle aggregate id such as agg_…')
      .optional()
      .describe('a CONSENSUS oracle aggregate of the same metric'),
  })
  .refine((b) => (b.reading === undefined) !== (b.aggregate_id === undefined), {
    message: 'send exactly one of reading or aggregate_id',
    path: ['reading'],
  });

const triggerSchema = z.object({
  object: z.literal('trigger'),
  trigger_id: z.string(),
  template_id: z.string(),
  state: z.enum(['ARMED', 'FIRED']),
  obligation_surface: z.looseObject({}),
  threshold: thresholdSchema,
  enabled_exposure_usd: z.string(),
  published_at: z.string(),
  fired_at: z.string().nullable(),
});
const publishedTrigger = triggerSchema.extend({
  inclusion: inclusionSchema,
  checkpoint: checkpointSchema,
  receipt_id: z.string(),
  verify_url: z.string(),
  charge: chargeSchema,
});

function triggerObject(t: Trigger) {
  return {
    object: 'trigger' as const,
    trigger_id: t.id,
    template_id: t.template_id,
    state: t.state,
    obligation_surface: t.obligation,
    threshold: t.threshold,
    enabled_exposure_usd: formatUsd(t.enabled_exposure_micros),
    published_at: t.published_at,
    fired_at: t.fired_at,
    ...(t.fire ? { fire: t.fire } : {}),
  };
}

const monthStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString();
const tiers = () => DATA.clear.bps_tiers;

const refused = (status: number, code: string, detail: string, extra?: Record<string, unknown>) =>
  new Problem({ status, code, title: status === 409 ? 'Conflict' : 'Unprocessable', detail, ...(extra ? { extra } : {}) });

export function registerTriggerRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/signal/trigger/publish',
      auth: 'key',
      tool: 'trigger_publish',
      summary: 'Publish a trigger from a template: arms its obligation surface (ARMED) with a threshold',
      tag: 'triggers',
      body: publishRequest,
      response: publishedTrigger,
      responses: { 201: { description: 'The trigger, ARMED', schema: publishedTrigger } },
      problems: [409, 422],
      charges: ['trigger_publish'],
      example: { template_id: 'ai_model_change', threshold: { metric: 'model_drift_score', operator: 'gte', value: '0.8' } },
      act: { lane: true, after: (r) => withCheckpointNote(ctx, r) },
    },
    async ({ input: body, key, event, bill }) => {
      const o = body.obligation ?? {};
      const bad = (field: string, message: string) =>
        new Problem({
          status: 400,
          code: 'invalid_body',
          title: 'Bad request',
          detail: `${field}: ${message}`,
          extra: { errors: [{ field, message }] },
        });
      const custom = body.template_id === CUSTOM_TEMPLATE;
      if (custom && !o.callable_actions) throw bad('obligation.callable_actions', `required for a ${CUSTOM_TEMPLATE} trigger`);
      if (custom && !o.exposure_ceiling_usd) throw bad('obligation.exposure_ceiling_usd', `required for a ${CUSTOM_TEMPLATE} trigger`);
      const surface = custom
        ? { callable_actions: CUSTOM_ACTIONS, exposure_ceiling_usd: CUSTOM_CEILING_USD, fee_bps: null, regulatory_hooks: [] as string[] }
        : TEMPLATES.find((t) => t.template_id === body.template_id)!.obligation_surface;
      const actions = o.callable_actions ?? surface.callable_actions;
      const stray = actions.filter((a) => !surface.callable_actions.includes(a));
      if (stray.length) throw bad('obligation.callable_actions', `not callable for ${body.template_id}: ${stray.join(', ')}`);
      const ceiling = o.exposure_ceiling_usd ?? surface.exposure_ceiling_usd;
      if (ceiling > surface.exposure_ceiling_usd)
        throw bad('obligation.exposure_ceiling_usd', `at most ${surface.exposure_ceiling_usd} for ${body.template_id}`);
      const ceilingMicros = usdToMicros(ceiling);
      // No silent maximum: what a fire is charged bps on is what the publish stated, else nothing.
      let exposure = 0;
      if (body.enabled_exposure_usd !== undefined) {
        if (body.enabled_exposure_usd.startsWith('-')) throw bad('enabled_exposure_usd', 'must not be negative');
        exposure = usdToMicros(body.enabled_exposure_usd);
        if (exposure > ceilingMicros) throw bad('enabled_exposure_usd', `exceeds the exposure ceiling ${ceiling}`);
      }
      const fee = obligationFeeBps(surface.fee_bps, o.fee_bps);
      if (!fee.ok) {
        throw new Problem({
          status: 422,
          code: 'fee_bps_fixed',
          title: 'Unprocessable',
          detail: `obligation.fee_bps ${fee.message}`,
          extra: { errors: [{ field: 'obligation.fee_bps', message: fee.message }], fee_bps: surface.fee_bps },
        });
      }
      const t: Trigger = {
        id: newSortableId('trg'),
        key_id: ownerId(key),
        template_id: body.template_id,
        state: 'ARMED',
        obligation: {
          callable_actions: actions,
          exposure_ceiling_usd: ceiling,
          fee_bps: fee.feeBps,
          regulatory_hooks: surface.regulatory_hooks,
        },
        threshold: body.threshold,
        enabled_exposure_micros: exposure,
        published_at: nowIso(),
        fired_at: null,
        fire: null,
        fee_micros: null,
      };
      const charge = bill('trigger_publish');
      const r = await commitAct(event, ctx, key, {
        run: async (_tx, state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'trigger_publish',
              decision: 'ARMED',
              subject: t.id,
              key_id: key.id,
              data: {
                template_id: t.template_id,
                obligation: t.obligation,
                threshold: t.threshold,
                enabled_exposure_usd: formatUsd(exposure),
              },
            },
            { charges: [{ keyId: key.id, ...charge }] },
          );
          const published: TriggerEvent = {
            event_id: newEventId(),
            type: 'trigger.published',
            trigger_id: t.id,
            template_id: t.template_id,
            state: 'ARMED',
            at: t.published_at,
            data: {
              obligation_surface: t.obligation,
              threshold: t.threshold,
              enabled_exposure_usd: formatUsd(exposure),
              receipt_id: receipt.receipt_id,
            },
          };
          // The event is the act's entry in the triggers log; the trigger's row and the event's deliveries are recorded with the group.
          const { index } = await state.append(TRIGGERS_LOG, leafBytes(published));
          const triggerRecord = record(PUBLISHED_TRIGGERS, { trigger: t, event: published, logIndex: index });
          const answer = provedAtGroupEnd(ctx, state, TRIGGERS_LOG, index, (proof) => ({
            ...triggerObject(t),
            ...proof,
            receipt_id: receipt.receipt_id,
            verify_url: receipt.verify_url,
            charge: chargeView(charge),
          }));
          return { writes: { receipt, records: [triggerRecord] }, reply: reply(answer, 201) };
        },
      });
      nudgeDeliverer();
      return r;
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/foundry/trigger/fire',
      auth: 'key',
      tool: 'trigger_fire',
      summary:
        'Fire a trigger with a reading or an oracle aggregate: ARMED -> FIRED once when the threshold is reached; charges bps on the enabled exposure',
      tag: 'triggers',
      body: fireRequest,
      response: z.looseObject({
        fired: z.boolean(),
        state: z.enum(['ARMED', 'FIRED']),
        trigger_id: z.string(),
        receipt_id: z.string(),
        charges: z.array(chargeSchema).optional().describe('bps_fire and bps_fee, when it fired'),
      }),
      problems: [404, 409, 422],
      charges: ['bps_fire', FEE_SKU],
      chargeRules: { [FEE_SKU]: { amount: 'trigger_fire_fee' } },
      x402: false,
      example: { trigger_id: 'trg_F4XWbax5r2lYmXbruurTFZ', reading: '0.91' },
      act: { after: (r) => withCheckpointNote(ctx, r) },
    },
    async ({ input: body, key, event, bill }) => {
      const t = await getTrigger(ctx.ledger.read, body.trigger_id);
      if (!t || t.key_id !== ownerId(key)) throw notFound(`no trigger ${body.trigger_id}`, 'unknown_trigger');
      if (t.state === 'FIRED') throw alreadyFired(t);
      let reading = body.reading;
      let source: Record<string, unknown> = { kind: 'reading' };
      if (body.aggregate_id) {
        const a = await getAggregate(ctx.ledger.read, body.aggregate_id);
        if (!a || a.key_id !== ownerId(key)) throw notFound(`no oracle aggregate ${body.aggregate_id}`, 'unknown_aggregate');
        if (a.metric !== t.threshold.metric)
          throw refused(422, 'metric_mismatch', `the aggregate measures ${a.metric}; the trigger watches ${t.threshold.metric}`);
        if (a.status !== 'CONSENSUS' || a.value === null)
          throw refused(409, 'reading_disputed', `aggregate ${a.id} is DISPUTED: it cannot fire a trigger`);
        reading = a.value;
        source = { kind: 'oracle_aggregate', aggregate_id: a.id, receipt_id: a.receipt_id };
      }
      const reached = thresholdReached(t.threshold, reading!);
      if (!reached) {
        // Not an error: the trigger stays ARMED. Receipted, not charged (nothing was enabled).
        return commitAct(event, ctx, key, {
          decide: (state) => {
            const receipt = state.receipt(ctx, {
              kind: 'trigger_fire',
              decision: 'NOT_REACHED',
              subject: t.id,
              key_id: key.id,
              data: { reading, source, threshold: t.threshold },
            });
            return {
              writes: { receipt },
              reply: reply({
                fired: false,
                state: 'ARMED',
                trigger_id: t.id,
                reading,
                source,
                threshold: t.threshold,
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
              }),
            };
          },
        });
      }
      const exposure = BigInt(t.enabled_exposure_micros);
      // The template's fee, whatever a trigger published before fee_bps was fixed stored.
      const feeBps = templateFeeBps(t.template_id);
      // What the fee rule reads: the month's fires so far, only for a template without its own bps.
      const feeInput = async (db: Parameters<typeof firedExposureSince>[0], at: Date) => ({
        exposureMicros: exposure,
        feeBps,
        tiers: tiers(),
        monthBeforeMicros: feeBps === null ? await firedExposureSince(db, ownerId(key), monthStart(at)) : 0n,
      });
      // The fee is computed under the write lock, from the month's fires as they stand there: no re-decision.
      const r = await commitAct(event, ctx, key, {
        run: async (tx, state) => {
          const at = new Date();
          const input = await feeInput(tx, at);
          // The rule the declaration names prices the line; the same rule, described, goes in the receipt.
          const feeLine = bill(FEE_SKU, input);
          const fee = fireFee(input.exposureMicros, input.feeBps, input.tiers, input.monthBeforeMicros);
          const tollLine = bill('bps_fire');
          const toll = tollLine.amountMicros;
          const fire = { reading: reading!, source, fee: feeView(fee, exposure), toll_usd: formatUsd(toll) };
          const receipt = state.receipt(
            ctx,
            { kind: 'trigger_fire', decision: 'FIRED', subject: t.id, key_id: key.id, data: { threshold: t.threshold, ...fire } },
            {
              charges: [
                { keyId: key.id, ...tollLine },
                { keyId: key.id, ...feeLine },
              ],
            },
          );
          if (!(await markFired(tx, t.id, at.toISOString(), { ...fire, receipt_id: receipt.receipt_id }, Number(fee.feeMicros))))
            throw alreadyFired(t);
          const appended = await recordEvent(tx, ownerId(key), {
            event_id: newEventId(),
            type: 'trigger.fired',
            trigger_id: t.id,
            template_id: t.template_id,
            state: 'FIRED',
            at: at.toISOString(),
            data: { ...fire, enabled_exposure_usd: formatUsd(exposure), receipt_id: receipt.receipt_id },
          });
          const after = (await getTrigger(tx, t.id))!;
          const proof = proofAnswer(ctx, TRIGGERS_LOG, appended);
          return {
            writes: { receipt },
            reply: reply({
              fired: true,
              ...triggerObject(after),
              ...proof,
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
              charges: [chargeView(tollLine), chargeView(feeLine)],
            }),
          };
        },
      });
      nudgeDeliverer();
      return r;
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/signal/trigger/feed.json',
      summary: 'The public trigger feed: publish and fire events of the triggers log, paged, with the newest signed checkpoint',
      auth: 'public',
      tag: 'triggers',
      query: feedQuery,
    },
    async ({ input }) => reply(await feedPage(ctx, TRIGGERS_LOG, input), 200, { 'access-control-allow-origin': '*' }),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/signal/trigger-oracle',
      summary: 'How oracle readings drive trigger fires (JSON; an HTML page for browsers)',
      auth: 'public',
      tag: 'triggers',
    },
    async ({ event }) => {
      const doc = triggerOracleDoc(ctx);
      if (wantsHtml(event)) return htmlResponse(triggerOraclePage(doc));
      return reply(doc, 200, { 'access-control-allow-origin': '*', vary: 'accept' });
    },
  );
}

function alreadyFired(t: Trigger): Problem {
  return new Problem({
    status: 409,
    code: 'trigger_already_fired',
    title: 'Conflict',
    detail: `trigger ${t.id} is FIRED: a trigger fires once`,
    extra: { state: 'FIRED' },
  });
}

function feeView(f: FireFee, exposure: bigint) {
  return {
    bps: f.bps,
    source: f.source,
    ...(f.tier ? { tier: f.tier } : {}),
    on_exposure_usd: formatUsd(exposure),
    amount_usd: formatUsd(f.feeMicros),
  };
}

function triggerOracleDoc(ctx: AppContext) {
  const site = ctx.config.SITE_URL;
  return {
    schema: 'fusegate-trigger-oracle-v1',
    title: 'How oracle readings drive trigger fires',
    steps: [
      `POST ${site}/signal/trigger/publish arms a trigger from a template with a threshold {metric, operator, value} (state ARMED).`,
      `POST ${site}/api/v1/oracle/aggregate with readings of that metric from the oracle sources gives a sealed aggregate: CONSENSUS with a value, or DISPUTED.`,
      `POST ${site}/api/v1/foundry/trigger/fire with {trigger_id, aggregate_id} (or a direct reading) fires it when "value <operator> threshold" holds: ARMED -> FIRED, once.`,
      'A DISPUTED aggregate never fires a trigger (409 reading_disputed); an aggregate of another metric is refused (422 metric_mismatch); a reading below the threshold leaves the trigger ARMED.',
      'A fire charges bps_fire plus bps on the enabled exposure: the template\'s fee_bps (a publish cannot change it: 422 fee_bps_fixed), with the Clear bps tiers, graduated, as the fallback for a custom obligation (template_id "custom"), which has none. A trigger published without enabled_exposure_usd enables 0.00.',
      `Every publish and fire is an event in the public feed ${site}/signal/trigger/feed.json and a signed webhook to each subscriber.`,
    ],
    aggregation: {
      method: 'weighted trimmed mean',
      trim_percent_each_side: ctx.config.ORACLE_TRIM_PERCENT,
      min_sources: ctx.config.ORACLE_MIN_SOURCES,
      tolerance_bps: ctx.config.ORACLE_TOLERANCE_BPS,
      disputed_when: ['fewer readings than min_sources', 'spread (max - min of the kept readings) * 10000 > tolerance_bps * |value|'],
      sources: DATA.foundry.oracle.sources,
    },
    operators: OPERATORS,
    templates: TEMPLATES.map((t) => ({
      template_id: t.template_id,
      default_action: t.default_action,
      obligation_surface: t.obligation_surface,
    })),
    bps_tiers: DATA.clear.bps_tiers,
  };
}

/** The same document as a page, for people who open the link in a browser. */
function triggerOraclePage(d: ReturnType<typeof triggerOracleDoc>): string {
  const e = escapeHtml;
  const table = (head: string[], rows: Array<Array<string | number | null>>) =>
    `<table><thead><tr>${head.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead><tbody>${rows
      .map((r) => `<tr>${r.map((c) => `<td>${e(c === null ? '—' : String(c))}</td>`).join('')}</tr>`)
      .join('')}</tbody></table>`;
  const a = d.aggregation;
  return htmlPage(
    d.title,
    `<h1>${e(d.title)}</h1>
<ol>${d.steps.map((s) => `<li>${e(s)}</li>`).join('')}</ol>
<h2>Aggregation</h2>
<p>${e(a.method)}: ${a.trim_percent_each_side}% trimmed at each end, at least ${a.min_sources} sources, DISPUTED beyond a spread of ${a.tolerance_bps} bps of the value.</p>
<ul>${a.disputed_when.map((w) => `<li>DISPUTED when ${e(w)}</li>`).join('')}</ul>
${table(
  ['source_id', 'label', 'weight', 'latency_ms'],
  a.sources.map((s) => [s.source_id, s.label, s.weight, s.latency_ms]),
)}
<h2>Threshold operators</h2><p>${d.operators.map((o) => `<code>${e(o)}</code>`).join(', ')}</p>
<h2>Templates</h2>
${table(
  ['template_id', 'default_action', 'callable_actions', 'exposure_ceiling_usd', 'fee_bps'],
  d.templates.map((t) => [
    t.template_id,
    t.default_action,
    t.obligation_surface.callable_actions.join(', '),
    t.obligation_surface.exposure_ceiling_usd,
    t.obligation_surface.fee_bps,
  ]),
)}
<h2>Clear bps tiers (graduated; the fallback of a custom obligation, which has no fee_bps)</h2>
${table(
  ['tier', 'bps', 'cleared USD per month up to'],
  d.bps_tiers.map((t) => [t.id, t.bps, t.cleared_usd_monthly_up_to]),
)}
<p>This page as JSON: send <code>Accept: application/json</code>. Schema <code>${e(d.schema)}</code>.</p>`,
  );
}

/**
 * Clear (SPEC 2.4, 4.2): the execute gate for the agents and bind_gate
 * verticals, restraint for hiring, and the exposure, usage and network reads.
 * The decision rule is src/domain/clear.ts; refusals are metered as NAP.
 */
import type { ActEvent } from '../act-event.ts';
import { record } from '../../ledger/records.ts';
import { hopLimitProblem } from '../hop-limit.ts';
import {} from '../act.ts';
import type { ActState } from '../../ledger/acts.ts';
import {
  approvalFields,
  approvalLink,
  commitHeldAct,
  heldRequest,
  holdFields,
  HoldNeedsReview,
  reviewIdField,
  type ReviewableDecision,
  type ReviewStep,
} from '../gate/reviews.ts';
import { z } from 'zod';
import { fingerprint } from '../../crypto/canonical.ts';
import { BPS_TIERS, CLEAR_RULES_VERSION, decideClear, exposureFeeMicros, monthOf, tierFor, type ClearFacts } from '../../domain/clear.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { isRefusal } from '../../domain/pricing.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { monthTotals, CLEAR_COUNTERS } from '../../ledger/clear.ts';
import { usage } from '../../ledger/meter.ts';
import type { AppContext } from '../context.ts';
import { reply, type Reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { actionSchema, callerOf, fuseIdSchema, visibleFuse, visibleIn, type Action } from '../gate/governed.ts';
import { chargeView, meteredAct, receiptFields } from './metered.ts';
import type { Bill } from '../charges.ts';
import { actKind, chargeSchema, receiptRef, ref, usdAmount, usdString } from './schemas.ts';
import { operation } from '../operation.ts';

const gateFields = {
  exposure_usd: usdAmount.optional().describe('money this act commits; counted as cleared exposure when the decision is PERMIT'),
  hold_above_usd: usdAmount.optional().describe('answer HOLD (human review) when exposure_usd is above this'),
  review_requested: z.boolean().optional().describe('true asks for HOLD (human review)'),
  review_id: reviewIdField,
};

export const executeGateRequest = z.strictObject({ fuse_id: fuseIdSchema, action: actionSchema, ...gateFields });

export const executeGateBindRequest = z.strictObject({
  fuse_id: fuseIdSchema,
  bind: z.strictObject({
    policy_ref: ref.describe('your reference of the policy being bound'),
    kind: actKind.default('bind_policy').describe('the act kind checked against the surface; default bind_policy'),
    line: z.string().max(64).optional().describe('line of business, recorded only'),
  }),
  ...gateFields,
});

export const restraintRequest = z.strictObject({
  subject_ref: ref.describe('your reference of what was restrained (a requisition or candidate id); no personal data'),
  act_kind: actKind.describe('the act that was not taken, e.g. reject_candidate'),
  decision: z.enum(['BLOCK', 'HOLD', 'DENY', 'SILENCE']).default('HOLD').describe('the refusal recorded'),
  reason: z.string().min(1).max(500),
  fuse_id: fuseIdSchema.optional().describe('a fuse of yours the restraint concerns (must exist)'),
  sku: z.enum(['restraint', 'restraint_call']).default('restraint').describe('restraint_call is the legacy alias: metered as restraint'),
});

export const exposureQuery = z.object({
  month: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'a UTC month, YYYY-MM')
    .optional(),
});
export const usageQuery = z.object({ since: z.iso.datetime({ message: 'an RFC 3339 UTC time' }).optional() });

export const executeGateResponse = z.object({
  decision: z.enum(['PERMIT', 'DENY', 'HOLD', 'SILENCE']),
  rule: z.string(),
  reason: z.string(),
  vertical: z.enum(['agents', 'bind_gate']),
  fuse_id: z.string(),
  state: z.string(),
  act_kind: z.string(),
  exposure_usd: usdString,
  cleared_exposure_usd: usdString,
  fingerprint: z.string(),
  charge: chargeSchema,
  ...receiptRef,
  receipt: z.string().describe('the signed receipt (compact JWS); an RR-1 service accepts a PERMIT in its Gate-Receipt header'),
});
export const restraintResponse = z.object({
  restraint_id: z.string(),
  decision: z.string(),
  act_kind: z.string(),
  subject_ref: z.string(),
  sku: z.literal('restraint'),
  requested_sku: z.enum(['restraint', 'restraint_call']),
  charge: chargeSchema,
  ...receiptRef,
});
const tierSchema = z.object({ id: z.string(), bps: z.number(), cleared_usd_monthly_up_to: z.number().nullable(), label: z.string() });
export const exposureResponse = z.object({
  key_id: z.string(),
  month: z.string(),
  cleared_exposure_usd: usdString,
  acts: z.number(),
  by_decision: z.record(z.string(), z.number()),
  tier: tierSchema,
  bps_fee_usd: usdString,
  next_tier: z.object({ id: z.string(), above_usd: usdString }).nullable(),
  tiers: z.array(tierSchema),
});
const skuUsage = z.object({ sku: z.string(), count: z.number(), nap: z.boolean(), amount_usd: usdString });
export const usageResponse = z.object({
  key_id: z.string(),
  since: z.string().nullable(),
  by_sku: z.array(skuUsage),
  total_usd: usdString,
  nap_usd: usdString,
});
export const networkResponse = z.object({
  month: z.string(),
  keys: z.number(),
  acts: z.number(),
  by_decision: z.record(z.string(), z.number()),
  cleared_exposure_usd: usdString,
  tier: tierSchema,
  nap_share: z.number().describe('refused acts / all acts this month'),
});

interface GateAct {
  vertical: 'agents' | 'bind_gate';
  fuseId: string;
  action: Action;
  exposure_usd?: string | undefined;
  hold_above_usd?: string | undefined;
  review_requested?: boolean | undefined;
  review_id?: string | undefined;
}

/**
 * One execute-gate act. Its receipt is a token (RR-1's Gate-Receipt) with a JWS
 * of its own. As a hop, it is decided wholly under the write lock, on the fuse
 * read there with the acts queued beside it: a fuse the caller may not see is
 * a 404 that writes nothing, and no state read before the lock can go stale.
 */
async function gateAct(event: ActEvent, ctx: AppContext, key: ApiKey, bill: Bill, a: GateAct): Promise<Reply> {
  if (key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  const caller = callerOf(key);
  const exposureMicros = a.exposure_usd ? usdToMicros(a.exposure_usd) : 0;
  const holdAboveMicros = a.hold_above_usd ? usdToMicros(a.hold_above_usd) : null;
  const fp = fingerprint(a.action);
  const created = new Date();
  const operation = a.vertical === 'agents' ? 'execute_gate' : 'execute_gate_bind';
  // A HOLD is a question for the account's people (docs/reviews.md); an approval is bound to the fuse, the act and its exposure.
  const held = heldRequest({ key, operation, amount: { usd: a.exposure_usd ?? '0' } }, () =>
    fingerprint({ fuse_id: a.fuseId, action: a.action, exposure_usd: a.exposure_usd ?? null }),
  );
  const decide = (state: ActState, step: ReviewStep | undefined): ReviewableDecision => {
    const fuse = visibleIn(caller, a.fuseId, state.fuse);
    const facts: ClearFacts = {
      state: fuse.state,
      in_surface: caller.surface.includes(a.action.kind),
      exposure_micros: exposureMicros,
      hold_above_micros: holdAboveMicros,
      review_requested: a.review_requested ?? false,
    };
    const ruled = decideClear(facts);
    if (ruled.decision === 'HOLD' && !step) throw new HoldNeedsReview();
    // An approval of this very request clears its HOLD; a DENY or SILENCE stands (and leaves the approval unused).
    const approval = step?.approval && (ruled.decision === 'HOLD' || ruled.decision === 'PERMIT') ? step.approval : undefined;
    const outcome = approval
      ? { decision: 'PERMIT' as const, rule: ruled.rule, reason: `${ruled.reason}; cleared by review ${approval.id}` }
      : ruled;
    const review = outcome.decision === 'HOLD' ? step?.hold?.review : undefined;
    const charge = bill(isRefusal(outcome.decision) ? 'hold' : 'execute_gate');
    const receipt = state.receipt(
      ctx,
      {
        kind: operation,
        decision: outcome.decision,
        subject: fuse.id,
        key_id: key.id,
        fingerprint: fp,
        data: {
          vertical: a.vertical,
          rules_version: CLEAR_RULES_VERSION,
          rule: outcome.rule,
          act_kind: a.action.kind,
          facts,
          ...(review ? { review_id: review.id } : {}),
          ...(approval ? { review: approvalLink(approval) } : {}),
        },
      },
      { signed: true, charges: [{ keyId: key.id, ...charge }] },
    );
    const cleared = outcome.decision === 'PERMIT' ? exposureMicros : 0;
    const clearAct = { keyId: key.id, decision: outcome.decision, exposureMicros: cleared, at: created };
    const summary = () => ({
      vertical: a.vertical,
      fuse_id: fuse.id,
      action: a.action,
      exposure_usd: formatUsd(exposureMicros),
      ...(a.hold_above_usd ? { hold_above_usd: a.hold_above_usd } : {}),
      rule: ruled.rule,
      reason: ruled.reason,
    });
    return {
      summary,
      held: outcome.decision === 'HOLD',
      cleared: approval !== undefined,
      writes: { receipt, records: [record(CLEAR_COUNTERS, clearAct)] },
      reply: reply({
        decision: outcome.decision,
        rule: outcome.rule,
        reason: outcome.reason,
        vertical: a.vertical,
        fuse_id: fuse.id,
        state: fuse.state,
        act_kind: a.action.kind,
        exposure_usd: formatUsd(exposureMicros),
        cleared_exposure_usd: formatUsd(cleared),
        fingerprint: fp,
        charge: chargeView(charge),
        ...receiptFields(receipt),
        receipt: receipt.jws,
        ...(review ? holdFields(ctx, review) : {}),
        ...(approval ? approvalFields(approval) : {}),
      }),
    };
  };
  // As a hop, decided purely on the group's fuse read; a HOLD, or a request naming its review, reads the review too.
  return commitHeldAct(event, ctx, key, held, a.review_id, { fuseId: a.fuseId, hopOf: key.id }, { decide });
}

const gateOptions = (b: {
  exposure_usd?: string | undefined;
  hold_above_usd?: string | undefined;
  review_requested?: boolean | undefined;
  review_id?: string | undefined;
}) => ({
  exposure_usd: b.exposure_usd,
  hold_above_usd: b.hold_above_usd,
  review_requested: b.review_requested,
  review_id: b.review_id,
});

function nextTier(exposure: bigint) {
  const i = BPS_TIERS.indexOf(tierFor(exposure));
  const cur = BPS_TIERS[i]!;
  const next = BPS_TIERS[i + 1];
  if (!next || cur.cleared_usd_monthly_up_to === null) return null;
  return { id: next.id, above_usd: formatUsd(BigInt(cur.cleared_usd_monthly_up_to) * 1_000_000n) };
}

export function registerClearRoutes(router: Router, ctx: AppContext): void {
  const gateProblems = [402, 404, 409, 422];

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/execute-gate',
      auth: 'key',
      tool: 'execute_gate',
      summary: 'PERMIT / DENY / HOLD / SILENCE for an agent act against one of your fuses; refusals are metered as NAP hold',
      tag: 'clear',
      body: executeGateRequest,
      response: executeGateResponse,
      problems: gateProblems,
      charges: ['execute_gate', 'hold'],
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', action: { kind: 'pay' }, exposure_usd: '1250.00', hold_above_usd: '10000.00' },
      act: { lane: true },
    },
    async ({ input: b, key, event, bill }) => {
      return gateAct(event, ctx, key, bill, { vertical: 'agents', fuseId: b.fuse_id, action: b.action, ...gateOptions(b) });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/execute-gate/bind',
      auth: 'key',
      tool: 'execute_gate_bind',
      summary: 'The execute gate for a policy bind (bind_gate vertical): PERMIT / DENY / HOLD / SILENCE before the bind',
      tag: 'clear',
      body: executeGateBindRequest,
      response: executeGateResponse,
      problems: gateProblems,
      charges: ['execute_gate', 'hold'],
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', bind: { policy_ref: 'POL-2026-0042' }, exposure_usd: '2500000.00' },
      act: { lane: true },
    },
    async ({ input: b, key, event, bill }) => {
      const action = { kind: b.bind.kind, policy_ref: b.bind.policy_ref, ...(b.bind.line ? { line: b.bind.line } : {}) };
      return gateAct(event, ctx, key, bill, { vertical: 'bind_gate', fuseId: b.fuse_id, action, ...gateOptions(b) });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/restraint',
      auth: 'key',
      tool: 'restraint',
      summary:
        'Records a restraint (an act not taken, e.g. a hiring decision held) as a sealed NAP receipt; restraint_call is its legacy alias',
      tag: 'clear',
      body: restraintRequest,
      response: restraintResponse,
      problems: [404, 409, 422],
      charges: ['restraint'],
      chargeRules: { restraint: { nap: true } },
      example: { subject_ref: 'req-118/cand-7', act_kind: 'reject_candidate', decision: 'HOLD', reason: 'adverse-action review pending' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      if (b.fuse_id) await visibleFuse(ctx.ledger.read, callerOf(key), b.fuse_id);
      const charge = bill('restraint');
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'restraint',
          decision: b.decision,
          subject: b.fuse_id ?? b.subject_ref,
          fingerprint: fingerprint({ subject_ref: b.subject_ref, act_kind: b.act_kind }),
          data: { vertical: 'hiring', subject_ref: b.subject_ref, act_kind: b.act_kind, reason: b.reason, requested_sku: b.sku },
        },
        [charge],
        (receipt) => ({
          reply: reply({
            restraint_id: receipt.receipt_id,
            decision: b.decision,
            act_kind: b.act_kind,
            subject_ref: b.subject_ref,
            sku: 'restraint',
            requested_sku: b.sku,
            charge: chargeView(charge),
            ...receiptFields(receipt),
          }),
        }),
        { commit: [...(b.fuse_id ? [] : ['subject']), 'data.subject_ref', 'data.reason'] },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/clear/exposure',
      tool: 'clear_exposure',
      summary: "The calling key's cleared exposure in a UTC month (default: this one), its bps tier and the bps fee it implies",
      auth: 'key',
      tag: 'clear',
      query: exposureQuery,
      response: exposureResponse,
    },
    async ({ key, input }) => {
      const month = input.month ?? monthOf();
      const t = await monthTotals(ctx.ledger.read, month, key.id);
      return reply({
        key_id: key.id,
        month,
        cleared_exposure_usd: formatUsd(t.cleared_micros),
        acts: t.acts,
        by_decision: t.by_decision,
        tier: tierFor(t.cleared_micros),
        bps_fee_usd: formatUsd(exposureFeeMicros(t.cleared_micros)),
        next_tier: nextTier(t.cleared_micros),
        tiers: BPS_TIERS,
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/clear/usage',
      tool: 'clear_usage',
      summary: 'Charges of the calling key per SKU (count, USD, NAP flag), optionally since a time',
      auth: 'key',
      tag: 'clear',
      query: usageQuery,
      response: usageResponse,
    },
    async ({ key, input }) => {
      const { since } = input;
      const { by_sku, total_usd, nap_usd } = await usage(ctx.ledger.read, key.id, since);
      return reply({ key_id: key.id, since: since ?? null, by_sku, total_usd, nap_usd });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/clear/network',
      summary: 'Network totals of the execute gate in a UTC month: acts by decision, cleared exposure, its tier',
      auth: 'public',
      tag: 'clear',
      query: exposureQuery,
      response: networkResponse,
    },
    async ({ input }) => {
      const month = input.month ?? monthOf();
      const t = await monthTotals(ctx.ledger.read, month);
      const refused = t.acts - (t.by_decision.PERMIT ?? 0) - (t.by_decision.GO ?? 0);
      return reply({
        month,
        keys: t.keys,
        acts: t.acts,
        by_decision: t.by_decision,
        cleared_exposure_usd: formatUsd(t.cleared_micros),
        tier: tierFor(t.cleared_micros),
        nap_share: t.acts === 0 ? 0 : refused / t.acts,
      });
    },
  );
}

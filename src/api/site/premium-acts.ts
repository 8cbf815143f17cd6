/**
 * The acts that the published tolls without an operation of their own buy
 * (SPEC 8 toll list; our designs, docs/premium-acts.md):
 *   POST /v1/fuse/heartbeat                  heartbeat 0.10          a sealed check-in: the fuse's state at this instant
 *   POST /v1/receipts/verify-pull            verify_pull 0.05        a receipt's verification evidence, pulled and receipted
 *   POST /v1/fuses/:fuse_id/panic            panic_receipt 49.00     blow a fuse now, with an individually signed panic receipt
 *   POST /api/v1/spoliation-seal/matter      matter_spoliation 500   one signed root over every spoliation seal of a matter
 *   POST /api/v1/foundry/parametric/run      parametric_run 2.00     run a FIRED trigger's parametric_window action
 *   POST /api/v1/clear/before                clear_before_act 10 / clear_before_wire 50 / clear_before_contract 150
 *                                            a pre-clearance: the execute-gate decision ahead of the act, individually signed;
 *                                            a refusal is the NAP hold 0.50 (SPEC: refusals map to NAP)
 * Each charges its toll once per act (a refused pre-clearance its NAP), shows it in `charge`, and seals a receipt.
 */
import { z } from 'zod';
import { fingerprint } from '../../crypto/canonical.ts';
import { rootOf, leafHash } from '../../crypto/merkle.ts';
import { CLEAR_RULES_VERSION, decideClear, type ClearFacts } from '../../domain/clear.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { isRefusal } from '../../domain/pricing.ts';
import { nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import type { Fuse } from '../../ledger/fuses.ts';
import { transitionFuse } from '../../ledger/fuses.ts';
import { matterSeals } from '../../ledger/nap.ts';
import { getReceipt } from '../../ledger/receipts.ts';
import { getTrigger } from '../../ledger/triggers.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { fuseChangedAlert } from '../gate/alert-events.ts';
import { fuseObject } from '../gate/fuses.ts';
import { actionSchema, callerOf, changeableFuse, changeableIn, fuseIdSchema, visibleFuse, visibleIn } from '../gate/governed.ts';
import { receiptEvidence } from '../gate/receipts.ts';
import { notFound, Problem } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { nudgeDeliverer } from './webhooks.ts';
import { committed } from './metered.ts';
import { usdAmount } from './schemas.ts';
import { operation } from '../operation.ts';

/** The pre-clearance tiers and their tolls (a pre-clearance that goes ahead; a refusal is the NAP `hold`). */
export const CLEAR_BEFORE = { act: 'clear_before_act', wire: 'clear_before_wire', contract: 'clear_before_contract' } as const;

const charged = { charge: chargeSchema, receipt_id: z.string(), verify_url: z.string() };

export const heartbeatRequest = z.strictObject({ fuse_id: fuseIdSchema });
export const verifyPullRequest = z.strictObject({
  receipt_id: z.string().regex(/^rcpt_[A-Za-z0-9_-]{1,80}$/, 'a receipt id such as rcpt_…'),
});
export const panicRequest = z.strictObject({
  reason: z.string().min(1).max(500).optional().describe('why (kept private: a commitment in the public receipt)'),
});
export const matterRequest = z.strictObject({
  matter_ref: z.string().min(1).max(128).describe('the matter_ref of the spoliation seals to seal together'),
});
export const parametricRequest = z.strictObject({
  trigger_id: z.string().regex(/^trg_[A-Za-z0-9_-]{1,64}$/, 'a trigger id such as trg_…'),
});
export const clearBeforeRequest = z.strictObject({
  tier: z
    .enum(['act', 'wire', 'contract'])
    .describe(
      'what is pre-cleared: an act (10.00), a wire (50.00) or a contract (150.00); a refusal is charged the NAP hold (0.50) whatever the tier',
    ),
  fuse_id: fuseIdSchema,
  action: actionSchema,
  exposure_usd: usdAmount.optional(),
  hold_above_usd: usdAmount.optional(),
  review_requested: z.boolean().optional(),
});

export function registerPremiumActs(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/fuse/heartbeat',
      auth: 'key',
      summary:
        "Heartbeat: seals the fuse's state at this instant (a check-in an agent or its watchdog can show later); charged whatever the state; not a hop",
      tag: 'gate',
      body: heartbeatRequest,
      response: z.looseObject({ fuse_id: z.string(), state: z.string(), alive: z.boolean(), at: z.string(), ...charged }),
      problems: [404],
      charges: ['heartbeat'],
      example: { fuse_id: 'fuse_…' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const caller = callerOf(key);
      const line = { keyId: key.id, ...bill('heartbeat') };
      return commitAct(event, ctx, key, {
        needs: { fuseId: b.fuse_id },
        decide: (state) => {
          // A fuse the caller may not see is a 404 here, under the lock: the act writes and charges nothing.
          const fuse = visibleIn(caller, b.fuse_id, state.fuse);
          const alive = fuse.state === 'LIVE' || fuse.state === 'ARMED';
          const at = nowIso();
          const receipt = state.receipt(
            ctx,
            {
              kind: 'heartbeat',
              decision: alive ? 'ALIVE' : fuse.state,
              subject: fuse.id,
              key_id: key.id,
              data: { state: fuse.state, at },
            },
            { charges: [line] },
          );
          return {
            writes: { receipt },
            reply: reply({
              fuse_id: fuse.id,
              state: fuse.state,
              alive,
              at,
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
            }),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/receipts/verify-pull',
      auth: 'key',
      summary:
        "Verify-pull: a receipt's verification evidence (leaf, inclusion proof, signed checkpoint), pulled by a key with a receipt of the pull (the free GET /v1/receipts/{id} stays free)",
      tag: 'receipts',
      body: verifyPullRequest,
      response: z.looseObject({ pulled: z.string(), evidence: z.looseObject({}), ...charged }),
      problems: [404],
      charges: ['verify_pull'],
      example: { receipt_id: 'rcpt_…' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const r = await getReceipt(ctx.ledger.read, b.receipt_id);
      if (!r) throw notFound(`no receipt ${b.receipt_id}`, 'unknown_receipt');
      const evidence = await receiptEvidence(ctx, r);
      const line = { keyId: key.id, ...bill('verify_pull') };
      return commitAct(event, ctx, key, {
        decide: (state) => {
          const receipt = state.receipt(
            ctx,
            { kind: 'verify_pull', decision: 'PULLED', subject: b.receipt_id, key_id: key.id, data: { log_index: r.log_index } },
            { charges: [line] },
          );
          return {
            writes: { receipt },
            reply: reply({
              pulled: b.receipt_id,
              evidence,
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
            }),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/fuses/:fuse_id/panic',
      auth: 'key',
      summary:
        'Panic: blows a LIVE, ARMED or UNSIGNED fuse of the account to DEAD at once and answers an individually signed panic receipt (a JWS that verifies offline); a DEAD fuse is 409, a public drill fuse 403, and neither charges anything',
      tag: 'fuses',
      body: panicRequest,
      response: z.looseObject({
        fuse_id: z.string(),
        state: z.literal('DEAD'),
        previous_state: z.string(),
        receipt: z.string(),
        ...charged,
      }),
      problems: [403, 404, 409],
      charges: ['panic_receipt'],
      role: 'agent',
      example: { reason: 'the agent is wiring funds in a loop' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const caller = callerOf(key);
      const fuseId = fuseIdSchema.safeParse(event.context.params?.fuse_id).data ?? '';
      // A fuse of the caller's account only: a drill fuse is 403 before any payment is settled.
      const seen = await changeableFuse(ctx.ledger.read, caller, fuseId);
      const from = ['LIVE', 'ARMED', 'UNSIGNED'] as const;
      const c = committed(
        { kind: 'panic', decision: 'DEAD', subject: fuseId, data: { from: seen.state, ...(b.reason ? { reason: b.reason } : {}) } },
        ['data.reason'],
      );
      const line = { keyId: key.id, ...bill('panic_receipt') };
      const answer = await commitAct(event, ctx, key, {
        needs: { fuseId },
        run: async (tx, state) => {
          const fuse = changeableIn(caller, fuseId, state.fuse);
          const now = nowIso();
          if (fuse.state !== seen.state || !(await transitionFuse(tx, fuse.id, from, 'DEAD', now))) {
            throw new Problem({
              status: 409,
              code: 'invalid_transition',
              title: 'Conflict',
              detail: `cannot panic a fuse that is ${fuse.state}: it is blown already or changed meanwhile; nothing was charged`,
              extra: { state: fuse.state },
            });
          }
          const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { signed: true, charges: [line], openings: c.openings });
          const after: Fuse = { ...fuse, state: 'DEAD', updated_at: now };
          return {
            writes: { receipt, fuse: after, records: [fuseChangedAlert(ownerId(key), after, fuse.state, receipt, key.id)] },
            reply: reply({
              ...fuseObject(after),
              previous_state: fuse.state,
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
              receipt: receipt.jws,
            }),
          };
        },
      });
      nudgeDeliverer();
      return answer;
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/spoliation-seal/matter',
      auth: 'key',
      summary:
        'Matter spoliation: seals every spoliation seal of a matter together, one RFC 9162 root over their roots in order, in an individually signed receipt (a litigation-hold record of the whole matter)',
      tag: 'nap',
      body: matterRequest,
      response: z.looseObject({ matter_root: z.string(), seals: z.number(), evidence_count: z.number(), receipt: z.string(), ...charged }),
      problems: [404],
      charges: ['matter_spoliation'],
      example: { matter_ref: 'claim-2026-118' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const seals = await matterSeals(ctx.ledger.read, ownerId(key), b.matter_ref);
      if (seals.length === 0)
        throw notFound(
          `no spoliation seal of matter ${b.matter_ref} in this account: seal its evidence first (POST /api/v1/spoliation-seal)`,
          'unknown_matter',
        );
      const root = Buffer.from(rootOf(seals.map((s) => leafHash(Buffer.from(s.rootHash, 'hex'))))).toString('hex');
      const evidence = seals.reduce((a, s) => a + s.evidenceCount, 0);
      const c = committed(
        {
          kind: 'matter_spoliation',
          decision: 'SEALED',
          subject: b.matter_ref,
          data: {
            matter_root: root,
            seals: seals.map((s) => ({ seal_id: s.id, root_hash: s.rootHash, receipt_id: s.receiptId })),
            evidence_count: evidence,
          },
        },
        ['subject'],
      );
      const line = { keyId: key.id, ...bill('matter_spoliation') };
      return commitAct(event, ctx, key, {
        decide: (state) => {
          const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { signed: true, charges: [line], openings: c.openings });
          return {
            writes: { receipt },
            reply: reply({
              matter_ref: b.matter_ref,
              matter_root: root,
              leaf_rule: 'RFC 9162: leaf i = SHA-256(0x00 || raw 32 bytes of seal i root_hash), seals oldest first',
              seals: seals.length,
              evidence_count: evidence,
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
              receipt: receipt.jws,
            }),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/foundry/parametric/run',
      auth: 'key',
      summary:
        "Parametric run: runs a FIRED trigger's parametric_window action (incident_sealed), sealing the window it opens: the fire's reading and receipt and the enabled exposure it releases",
      tag: 'triggers',
      body: parametricRequest,
      response: z.looseObject({
        trigger_id: z.string(),
        action: z.literal('parametric_window'),
        released_exposure_usd: z.string(),
        ...charged,
      }),
      problems: [404, 409, 422],
      charges: ['parametric_run'],
      example: { trigger_id: 'trg_…' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const t = await getTrigger(ctx.ledger.read, b.trigger_id);
      if (!t || t.key_id !== ownerId(key)) throw notFound(`no trigger ${b.trigger_id}`, 'unknown_trigger');
      if (!t.obligation.callable_actions.includes('parametric_window')) {
        throw new Problem({
          status: 422,
          code: 'action_not_callable',
          title: 'Unprocessable',
          detail: `parametric_window is not a callable action of trigger ${t.id} (${t.obligation.callable_actions.join(', ')}); nothing was charged`,
          extra: { callable_actions: t.obligation.callable_actions },
        });
      }
      if (t.state !== 'FIRED' || !t.fire)
        throw new Problem({
          status: 409,
          code: 'trigger_not_fired',
          title: 'Conflict',
          detail: `trigger ${t.id} is ${t.state}: a parametric window opens on a fire; nothing was charged`,
          extra: { state: t.state },
        });
      const fire = t.fire as { reading?: string; receipt_id?: string };
      const released = formatUsd(t.enabled_exposure_micros);
      const line = { keyId: key.id, ...bill('parametric_run') };
      return commitAct(event, ctx, key, {
        decide: (state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'parametric_run',
              decision: 'WINDOW_OPEN',
              subject: t.id,
              key_id: key.id,
              data: {
                action: 'parametric_window',
                fired_at: t.fired_at,
                reading: fire.reading ?? null,
                fire_receipt_id: fire.receipt_id ?? null,
                released_exposure_usd: released,
              },
            },
            { charges: [line] },
          );
          return {
            writes: { receipt },
            reply: reply({
              trigger_id: t.id,
              action: 'parametric_window',
              fired_at: t.fired_at,
              reading: fire.reading ?? null,
              fire_receipt_id: fire.receipt_id ?? null,
              released_exposure_usd: released,
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
            }),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/clear/before',
      auth: 'key',
      summary:
        'Clear before: a pre-clearance, the execute-gate decision (PERMIT, DENY, HOLD, SILENCE) given ahead of an act, a wire or a contract in an individually signed receipt a counterparty verifies offline; a PERMIT is charged its tier toll, a refusal the NAP hold; clears no exposure and counts no hop',
      tag: 'clear',
      body: clearBeforeRequest,
      response: z.looseObject({ tier: z.string(), decision: z.string(), receipt: z.string(), ...charged }),
      problems: [404],
      charges: [...Object.values(CLEAR_BEFORE), 'hold'],
      example: { tier: 'wire', fuse_id: 'fuse_…', action: { kind: 'wire', amount: '250000.00' }, exposure_usd: '250000.00' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const caller = callerOf(key);
      const fuse = await visibleFuse(ctx.ledger.read, caller, b.fuse_id);
      const facts: ClearFacts = {
        state: fuse.state,
        in_surface: caller.surface.includes(b.action.kind),
        exposure_micros: b.exposure_usd ? usdToMicros(b.exposure_usd) : 0,
        hold_above_micros: b.hold_above_usd ? usdToMicros(b.hold_above_usd) : null,
        review_requested: b.review_requested ?? false,
      };
      const outcome = decideClear(facts);
      const sku = CLEAR_BEFORE[b.tier];
      // SPEC 1, 2.4: a refusal (DENY, HOLD, SILENCE) is metered as the NAP, not as the tier's toll.
      const line = { keyId: key.id, ...bill(isRefusal(outcome.decision) ? 'hold' : sku) };
      const input = {
        kind: sku,
        decision: outcome.decision,
        subject: fuse.id,
        key_id: key.id,
        fingerprint: fingerprint(b.action),
        data: { tier: b.tier, rules_version: CLEAR_RULES_VERSION, rule: outcome.rule, act_kind: b.action.kind, facts, pre_clearance: true },
      };
      return commitAct(event, ctx, key, {
        decide: (state) => {
          const receipt = state.receipt(ctx, input, { signed: true, charges: [line] });
          return {
            writes: { receipt },
            reply: reply({
              tier: b.tier,
              decision: outcome.decision,
              rule: outcome.rule,
              reason: outcome.reason,
              fuse_id: fuse.id,
              state: fuse.state,
              act_kind: b.action.kind,
              exposure_usd: formatUsd(facts.exposure_micros),
              charge: chargeView(line),
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
              receipt: receipt.jws,
            }),
          };
        },
      });
    },
  );
}

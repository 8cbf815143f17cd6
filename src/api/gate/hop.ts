/**
 * Gate core routes (SPEC 4.1): hop, lookup, OCSP alias, welded act, classify,
 * the execute-gate demo, and the public demos on the drill fuses.
 */
import type { ActEvent } from '../act-event.ts';
import { hopLimitProblem } from '../hop-limit.ts';
import type { H3Event } from 'h3';
import { z } from 'zod';
import { ACT_KINDS_TEXT } from '../../catalog/surfaces.ts';
import { classify } from '../../domain/classify.ts';
import { decideHop } from '../../domain/fuse.ts';
import { DRILL_FUSES } from '../../ledger/fuses.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { callerKey } from '../auth.ts';
import type { AppContext } from '../context.ts';
import { actProblem, commitAct } from '../act.ts';
import { haltUnlessAnsweredWithin } from './halt.ts';
import { reply, type Reply } from '../reply.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import { paidCallOf } from '../../payments/x402/keyless.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import type { Fuse } from '../../ledger/fuses.ts';
import type { X402Doc } from '../../payments/x402/resources.ts';
import type { Router } from '../router.ts';
import {
  actionSchema,
  callerOf,
  fuseIdSchema,
  governedHop,
  hopBody,
  hopReply,
  hopResponse,
  toolSchema,
  UNCHARGED,
  visibleFuse,
  visibleIn,
  type Caller,
  type HopResult,
} from './governed.ts';
import { operation } from '../operation.ts';

/**
 * The fuse id in keyed examples: one of the caller's own (POST /v1/fuses makes
 * one). The drill fuses answer only the public demos; a key gets 404 for them.
 */
const KEYED_FUSE_EXAMPLE = 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd';

/** The fuse a keyed hop or act checks, as the reference describes it. */
const heldFuseId = fuseIdSchema.describe(
  "the fuse this agent's acts are checked against: one of the account's (`POST /v1/fuses` makes one)",
);
export const hopRequest = z.strictObject({
  fuse_id: heldFuseId,
  action: actionSchema.optional(),
  tool: toolSchema.optional().describe("the agent's tool this hop gates (an MCP tool name), named in the receipt"),
});
export const actRequest = z.strictObject({ fuse_id: heldFuseId, action: actionSchema });
export const lookupQuery = z.object({ fuse_id: fuseIdSchema });
export const classifyRequest = z
  .strictObject({ action: actionSchema.optional(), text: z.string().min(1).max(4000).optional() })
  .refine((b) => (b.action === undefined) !== (b.text === undefined), { message: 'send exactly one of action or text' });
export const lookupResponse = z.object({
  fuse_id: z.string(),
  exists: z.boolean(),
  state: z.enum(['LIVE', 'ARMED', 'DEAD', 'UNSIGNED']),
  ok: z.boolean(),
  checked_at: z.string(),
  receipt_id: z
    .string()
    .optional()
    .describe(
      'an x402-paid lookup only (with `charge`, the line its payment paid: the hop toll): the receipt of the lookup, naming its payment; a keyed lookup charges no toll',
    ),
  verify_url: z.url().optional(),
  charge: chargeSchema.optional(),
});
// One list of what the act charged (a hop's single `charge` would show only its first line).
export const actResponse = hopResponse.omit({ charge: true }).extend({
  acted: z.boolean(),
  act_kind: z.string(),
  fingerprint: z.string().describe('SHA-256 hex of the canonical JSON of the action'),
  charges: z
    .array(chargeSchema)
    .describe(
      'every line this act charged: execute_gate and seal when it acted, the NAP hold for a refusal (for an x402-paid act, the lines its payment paid); empty for a public demo',
    ),
});
const demoHopRequest = z.strictObject({ fuse_id: fuseIdSchema.default(DRILL_FUSES.live), action: actionSchema.optional() });
const demoActRequest = z.strictObject({ fuse_id: fuseIdSchema.default(DRILL_FUSES.live), action: actionSchema });
const demoLookupQuery = z.object({ fuse_id: fuseIdSchema.default(DRILL_FUSES.live) });

function actReply(r: HopResult) {
  const { charge: _first, ...hop } = hopBody(r);
  return reply({
    ...hop,
    acted: r.outcome.verdict,
    act_kind: r.receipt.payload.data?.act_kind,
    fingerprint: r.fingerprint,
    charges: r.charges.map(chargeView),
  });
}

const lookupBody = (fuse: Fuse) => ({
  fuse_id: fuse.id,
  exists: true,
  state: fuse.state,
  ok: decideHop(fuse.state, undefined, []).ok,
  checked_at: new Date().toISOString(),
});

/** A lookup counts against the key's hop limit (SPEC 8.1) but charges no toll (the OCSP alias, the public demo: no payment). */
async function lookup(ctx: AppContext, caller: Caller, fuseId: string): Promise<Reply> {
  const fuse = await visibleFuse(ctx.ledger.read, caller, fuseId);
  const body = lookupBody(fuse);
  if (caller.key) {
    const key = caller.key;
    if (key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
    // Counted as an act: one hop of the key's quota, under the lock, with the acts queued beside it.
    await ctx.ledger.act({ needs: { hopOf: key.id }, decide: () => ({ writes: {}, result: undefined }) }).catch((e: unknown) => {
      throw actProblem(e, key);
    });
  }
  return reply(body);
}

/**
 * The keyed lookup as an act: one hop of the key's quota, no receipt; paid with
 * x402 (past the hop limit or without a key), no hop counted and a receipt of
 * the lookup naming the payment (api/act.ts commitAct settles it).
 */
async function lookupAct(event: ActEvent, ctx: AppContext, key: ApiKey, fuseId: string): Promise<Reply> {
  const paid = paidCallOf(event);
  const fuse = await visibleFuse(ctx.ledger.read, callerOf(key), fuseId);
  const body = lookupBody(fuse);
  if (!paid && key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  return commitAct(event, ctx, key, {
    needs: { hopOf: key.id },
    decide(state) {
      if (!paid) return { writes: {}, reply: reply(body) };
      const receipt = state.receipt(
        ctx,
        {
          kind: 'lookup',
          decision: fuse.state,
          subject: fuse.id,
          ...(paid.keyless ? {} : { key_id: key.id }),
          data: { state: fuse.state, ok: body.ok },
        },
        { signed: true },
      );
      return { writes: { receipt }, reply: reply({ ...body, receipt_id: receipt.receipt_id, verify_url: receipt.verify_url }) };
    },
  });
}

export function registerHopRoutes(router: Router, ctx: AppContext): void {
  const keyed = async (event: H3Event) => callerOf(callerKey(event));
  // The demo's rate limit is the router's (route-guard.ts): a demo route declares auth: 'demo'.
  const publicCaller = async (_event: H3Event) => callerOf(undefined);

  // Our x402 extension (SPEC 7 answers 402 at the hop limit): a hop or lookup paid per call by a key past
  // its limit, or by an agent without a key (which sees only the public drill fuses, like the demos). A
  // lookup counts as a hop, so it costs the hop toll. Not the OCSP alias: it must answer "halt" within
  // OCSP_HALT_AFTER_MS, which a settlement cannot promise.
  const PAID_HOP: X402Doc = { when: "past the key's hop limit, or without a key (public drill fuses only)", pastHopLimit: true };
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/fuse/hop',
      auth: 'key',
      tool: 'fuse_hop',
      summary: 'May I act right now? Checks the fuse, charges the hop, answers with a signed receipt',
      description: ACT_KINDS_TEXT,
      tag: 'gate',
      body: hopRequest,
      response: hopResponse,
      problems: [402, 404, 409, 422],
      charges: ['execute_gate', 'hold'],
      x402: PAID_HOP,
      example: { fuse_id: KEYED_FUSE_EXAMPLE, action: { kind: 'pay', amount: '120.00' } },
      act: { lane: true },
    },
    ({ input: body, key, event, bill }) =>
      governedHop(event, ctx, callerOf(key), { kind: 'hop', fuseId: body.fuse_id, action: body.action, tool: body.tool }, hopReply, bill),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/fuse/lookup',
      auth: 'key',
      tool: 'fuse_lookup',
      summary: "A fuse's state; counts against the hop limit, no toll",
      tag: 'gate',
      query: lookupQuery,
      response: lookupResponse,
      problems: [402, 404],
      x402: { ...PAID_HOP, sku: 'execute_gate' },
      act: {},
    },
    ({ input: query, key, event }) => lookupAct(event, ctx, key, query.fuse_id),
  );

  // OCSP-style alias: same answer while the ledger answers; 503 "halt" when it cannot be reached.
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/ocsp',
      tool: 'ocsp',
      summary: 'OCSP-style alias of lookup; 503 halt when the ledger cannot be reached',
      auth: 'key',
      tag: 'gate',
      query: lookupQuery,
      response: lookupResponse,
      problems: [402, 404, 503],
      x402: false,
    },
    ({ input, event }) =>
      haltUnlessAnsweredWithin(event, ctx.config.OCSP_HALT_AFTER_MS, async () => {
        const caller = await keyed(event);
        const { fuse_id } = input;
        return await lookup(ctx, caller, fuse_id);
      }),
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/act',
      auth: 'key',
      tool: 'act',
      summary: 'Welded act: hop first, closed-world surface check, sealed act receipt with the fingerprint',
      description: ACT_KINDS_TEXT,
      tag: 'gate',
      body: actRequest,
      response: actResponse,
      problems: [402, 404, 409, 422],
      charges: ['execute_gate', 'seal', 'hold'],
      example: { fuse_id: KEYED_FUSE_EXAMPLE, action: { kind: 'pay', amount: '120.00', payee: 'acme' } },
      act: { lane: true },
    },
    ({ input: body, key, event, bill }) =>
      governedHop(event, ctx, callerOf(key), { kind: 'act', fuseId: body.fuse_id, action: body.action }, actReply, bill),
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/classify',
      auth: 'key',
      tool: 'classify',
      summary: 'Deterministic act classifier (rules in data) with a signed receipt',
      tag: 'gate',
      body: classifyRequest,
      problems: [409, 422],
      charges: ['classify'],
      example: { text: 'wire 5,000 USD to the supplier' },
      act: {},
    },
    async ({ input: body, key, event, bill }) => {
      const c = classify(body);
      const fp = fingerprint(body);
      const charge = { keyId: key.id, ...bill('classify') };
      return commitAct(event, ctx, key, {
        decide(state) {
          const receipt = state.receipt(
            ctx,
            { kind: 'classify', decision: c.act_kind ? 'CLASSIFIED' : 'UNCLASSIFIED', key_id: key.id, fingerprint: fp, data: { ...c } },
            { charges: [charge] },
          );
          return {
            writes: { receipt },
            reply: reply({ ...c, receipt_id: receipt.receipt_id, verify_url: receipt.verify_url, charge: chargeView(charge) }),
          };
        },
      });
    },
  );

  // PERMIT / DENY for a fuse and an action, with the reason. A demo: no hop is counted, nothing is charged.
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/execute-gate/demo',
      tool: 'execute_gate_demo',
      summary: 'PERMIT or DENY for a fuse and an action, with the reason; uncharged',
      auth: 'key',
      tag: 'gate',
      body: actRequest,
      problems: [404],
      example: { fuse_id: KEYED_FUSE_EXAMPLE, action: { kind: 'pay' } },
    },
    async ({ input: body, event }) => {
      const caller = await keyed(event);
      const fp = fingerprint(body.action);
      const answer = await commitAct(event, ctx, caller.key, {
        needs: { fuseId: body.fuse_id },
        decide(state) {
          const fuse = visibleIn(caller, body.fuse_id, state.fuse);
          const o = decideHop(fuse.state, body.action.kind, caller.surface);
          const decision = o.verdict ? 'PERMIT' : 'DENY';
          const receipt = state.receipt(ctx, {
            kind: 'execute_gate_demo',
            decision,
            subject: fuse.id,
            key_id: caller.key!.id,
            demo: true,
            fingerprint: fp,
            data: { state: fuse.state, reason: o.reason },
          });
          return {
            writes: { receipt },
            reply: reply({
              fuse_id: fuse.id,
              state: fuse.state,
              decision,
              reason: o.reason,
              receipt_id: receipt.receipt_id,
              verify_url: receipt.verify_url,
            }),
          };
        },
      });
      return answer;
    },
  );

  // Public demos on the drill fuses: never charged, rate limited per client address.
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/demo/hop',
      tool: 'demo_hop',
      summary: 'Public hop on a drill fuse (fuse_drill_live or fuse_drill_dead); never charged',
      auth: 'demo',
      tag: 'demo',
      body: demoHopRequest,
      response: hopResponse,
      problems: [404, 429],
      example: { fuse_id: 'fuse_drill_dead' },
    },
    async ({ input: body, event }) => {
      const caller = await publicCaller(event);
      return await governedHop(event, ctx, caller, { kind: 'hop', fuseId: body.fuse_id, action: body.action }, hopReply, UNCHARGED);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/demo/act',
      tool: 'demo_act',
      summary: 'Public welded act on a drill fuse; never charged',
      auth: 'demo',
      tag: 'demo',
      body: demoActRequest,
      response: actResponse,
      problems: [404, 429],
      example: { action: { kind: 'pay' } },
    },
    async ({ input: body, event }) => {
      const caller = await publicCaller(event);
      return await governedHop(event, ctx, caller, { kind: 'act', fuseId: body.fuse_id, action: body.action }, actReply, UNCHARGED);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/demo/lookup',
      tool: 'demo_lookup',
      summary: 'Public lookup of a drill fuse',
      auth: 'demo',
      tag: 'demo',
      query: demoLookupQuery,
      response: lookupResponse,
      problems: [404, 429],
    },
    async ({ input, event }) => {
      const caller = await publicCaller(event);
      const { fuse_id } = input;
      return await lookup(ctx, caller, fuse_id);
    },
  );
}

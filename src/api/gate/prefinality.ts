/**
 * Pre-finality clearance (SPEC 1, 2.2, 4.1, 5.4, 7):
 *   POST /v1/prefinality/evaluate      key, or an x402 payment: 200 GO + JWT, 401, 402, 403 NO_GO, 409 HOLD
 *   POST /demo/prefinality/evaluate    no key, rate limited, receipts marked demo, never charged
 *   POST /v1/prefinality/verify        no auth: is this receipt JWT valid, and why not
 *   POST /v1/prefinality/rtp/gate      key: does the receipt clear this payment order (once)
 *   GET  /.well-known/prefinality-jwks.json, /.well-known/prefinality.json
 * The rules are in src/domain/prefinality.ts (data in src/content/prefinality-rules.json).
 */
import type { ActEvent } from '../act-event.ts';
import { record } from '../../ledger/records.ts';
import { type Bill } from '../charges.ts';
import { UNCHARGED, callerOf, seesFuse, type Caller as FuseViewer } from './governed.ts';
import { committed } from '../site/metered.ts';
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { fingerprint } from '../../crypto/canonical.ts';
import { PREFINALITY_TYP } from '../../crypto/receipt.ts';
import { ACCEPTED_ALGS, REQUIRED_CLAIMS, signPrefinalityJwt, verifyPrefinalityJwt } from '../../domain/prefinality-jwt.ts';
import {
  RAILS,
  RULES,
  evaluatePrefinality,
  meteringOf,
  rtpGateReasons,
  goExposureMicros,
  evaluateRequestSchema,
  paymentOrderSchema,
  type Decision,
  type EvaluateRequest,
} from '../../domain/prefinality.ts';
import { newId, numericDate } from '../../ids.ts';
import type { Fuse, FuseState } from '../../ledger/fuses.ts';
import { claimReceiptUse, receiptUse } from '../../ledger/prefinality.ts';
import type { ReceiptInput } from '../../ledger/receipts.ts';
import { paymentFacts, type PresentedPayment } from '../../payments/x402/gate.ts';
import { fixedMicros, paidRouteOf, resourceOf, pricesToConvert } from '../../payments/x402/resources.ts';
import { priceInAtomicUnits } from '../../domain/x402.ts';
import { paidResource } from '../../payments/x402/service.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import type { ActCharge, ActState } from '../../ledger/acts.ts';
import { type ClearActRow, CLEAR_COUNTERS } from '../../ledger/clear.ts';
import { reply, toResponse, type Reply } from '../reply.ts';
import type { RouteDoc, RouteRecord, Router } from '../router.ts';
import type { X402Doc } from '../../payments/x402/resources.ts';
import { retryIfStale, StateChanged } from '../stale-retry.ts';
import { badRequest } from '../problem.ts';
import type { HeldAmount } from '../../domain/review.ts';
import {
  approvalFields,
  approvalLink,
  commitHeldAct,
  heldRequest,
  holdFields,
  HoldNeedsReview,
  type HeldRequest,
  type ReviewableDecision,
  type ReviewStep,
} from './reviews.ts';
import { operation } from '../operation.ts';

export const EVALUATE_PATH = '/v1/prefinality/evaluate';
export const DEMO_EVALUATE_PATH = '/demo/prefinality/evaluate';
export const VERIFY_PATH = '/v1/prefinality/verify';
export const RTP_GATE_PATH = '/v1/prefinality/rtp/gate';
export const JWKS_PATH = '/.well-known/prefinality-jwks.json';
export const MANIFEST_PATH = '/.well-known/prefinality.json';

/** SPEC 4.1: the status of each decision. */
export const DECISION_STATUS: Record<Decision, number> = { GO: 200, NO_GO: 403, HOLD: 409 };

/** The decision body, the same on 200, 403 and 409 (the status says the decision). */
const decisionBody = z.looseObject({
  object: z.literal('prefinality_decision'),
  decision: z.enum(['GO', 'NO_GO', 'HOLD']),
  rail: z.string(),
  transfer_hash: z.string(),
  transfer_commitment: z.string().describe('the salted commitment to the transfer that the public receipt holds at data.transfer'),
  transfer_salt: z.string().describe('its salt (base64url): with the transfer, it opens that commitment to anyone you show it to'),
  receipt_id: z.string(),
  verify_url: z.string(),
  demo: z.boolean(),
  charge: chargeSchema.nullable(),
});
/** SPEC 4.1's pre-finality evaluate responses, in its words: the route declares them, the manifest lists them. */
const EVALUATE_STATUSES: Record<number, string> = {
  200: 'GO, with a signed receipt JWT',
  401: 'API key or x402 payment required',
  402: 'x402 stablecoin payment required (only when x402 is configured)',
  403: 'NO_GO, fail closed',
  409: 'HOLD, human review',
};
const decisionResponses = {
  200: { description: EVALUATE_STATUSES[200]!, schema: decisionBody },
  403: { description: EVALUATE_STATUSES[403]!, schema: decisionBody },
  409: { description: EVALUATE_STATUSES[409]!, schema: decisionBody },
};
const rtpGateBody = z.looseObject({
  object: z.literal('rtp_gate_result'),
  pass: z.boolean(),
  decision: z.enum(['GO', 'NO_GO']),
  order_hash: z.string(),
  reasons: z.array(z.looseObject({ code: z.string() })),
  mismatched_fields: z.array(z.string()),
  receipt_id: z.string(),
  verify_url: z.string(),
  charge: chargeSchema,
});

/** What an approval of an evaluate is bound to: the rail, the transfer (amount, counterparty...), the mandate and the fuse. */
const heldFingerprint = (req: EvaluateRequest): string =>
  fingerprint({ rail: req.rail, transfer: req.transfer, mandate: req.mandate ?? null, fuse_id: req.context?.fuse_id ?? null });
/** What a held transfer puts at stake, for REVIEW_TWO_APPROVERS_ABOVE_USD: USD, USDC or no currency named read as USD; another currency has no rate here. */
function heldAmount(req: EvaluateRequest): HeldAmount | undefined {
  const { amount, currency } = req.transfer;
  if (amount === undefined) return undefined;
  return currency === undefined || currency === 'USD' || currency === 'USDC' ? { usd: amount } : { otherCurrency: true };
}

const verifyRequestSchema = z.strictObject({ receipt: z.string().min(1).max(16384) });
const rtpGateRequestSchema = z.strictObject({ receipt: z.string().min(1).max(16384), payment_order: paymentOrderSchema });

interface Caller {
  /** The key, or the keyless payer's (`x402:<network>:<payer>`, the receipt JWT's `sub`); undefined for the public demo. */
  keyId: string | undefined;
  /** Whose fuses the caller sees: its account's, or the drill fuses for the demo and a keyless payer. */
  viewer: FuseViewer;
  /** A keyless call paying with x402 (presented; verified and settled by the pipeline). */
  payment?: PresentedPayment;
}

export function registerPrefinalityRoutes(router: Router, ctx: AppContext): void {
  // The x402 price is the GO toll (src/payments/x402/resources.ts); an inexact conversion stops start-up.
  const evaluateDoc = {
    tool: 'prefinality_evaluate',
    summary: 'Pre-finality clearance: GO (200, signed receipt JWT), NO_GO (403) or HOLD (409) before an irreversible commit',
    tag: 'prefinality',
    body: evaluateRequestSchema,
    responses: decisionResponses,
    problems: [401, 402, 422],
    charges: ['execute_gate', 'hold'],
    // SPEC 5.4: the price is the GO toll; only a GO (200) is settled, a HOLD or NO_GO costs the payer nothing.
    x402: {
      sku: meteringOf('GO').sku,
      when: 'no API key; settled only when the decision is GO',
      rails: ['x402', 'rtp'],
      extension: false,
      settlesOn: [DECISION_STATUS.GO],
    },
  } satisfies Omit<RouteDoc, 'auth'>;
  // For the manifest: whether this service takes a payment for evaluate, and its requirements.
  const route = paidRouteOf('POST', EVALUATE_PATH, { ...evaluateDoc, auth: 'key' as const })!;
  const paid = paidResource(ctx, resourceOf(ctx.config.BASE_URL, route), pricesToConvert(route));

  /** The fuse's state if the caller may see it (its own fuses; drill fuses for the demo and a keyless payer). */
  function visibleState(fuse: Fuse | undefined, caller: Caller): FuseState | undefined {
    return fuse && seesFuse(caller.viewer, fuse) ? fuse.state : undefined;
  }

  /**
   * Decides wholly under the write lock, on the fuse named in the context as read there with the
   * group (nothing read before the lock to compare); mints, signs and commits receipt, charge and
   * answer there.
   */
  async function decide(event: ActEvent, req: EvaluateRequest, caller: Caller, bill: Bill): Promise<Reply> {
    const fuseId = req.context?.fuse_id;
    const demo = caller.keyId === undefined;
    const transfer_hash = fingerprint(req.transfer);
    // A key's HOLD is a question for its account's people (docs/reviews.md); the demo and a keyless payer have none to ask.
    const held: HeldRequest | undefined =
      caller.keyId && !caller.payment && caller.viewer.key
        ? heldRequest(
            {
              key: caller.viewer.key,
              operation: 'prefinality_evaluate',
              ttlSeconds: req.mandate?.review_expires_in_seconds,
              amount: heldAmount(req),
            },
            () => heldFingerprint(req),
          )
        : undefined;
    if (req.review_id && !held)
      throw badRequest(
        'review_needs_key',
        'review_id clears a request held for an API key of an account: the demo and x402 payers have no reviews',
      );
    const decideUnderLock = (state: ActState, step: ReviewStep | undefined): ReviewableDecision => {
      const now = new Date();
      const fuse = fuseId === undefined ? undefined : { id: fuseId, state: visibleState(state.fuse, caller) };
      const ev = evaluatePrefinality(req, { fuse, now });
      if (ev.decision === 'HOLD' && held && !step) throw new HoldNeedsReview();
      // An approval of this very request clears what held it; a NO_GO stands (and leaves the approval unused).
      const approval = step?.approval && ev.decision !== 'NO_GO' ? step.approval : undefined;
      const decision: Decision = approval ? 'GO' : ev.decision;
      const review = decision === 'HOLD' ? step?.hold?.review : undefined;
      const key = ctx.keyring.current;
      const iat = numericDate(now);
      const exp = iat + ctx.config.PREFINALITY_RECEIPT_TTL_SECONDS;
      const jti = newId('pfr');
      // The transfer (account numbers, amount, counterparty) is the caller's: the public entry holds a salted
      // commitment to it, whose opening its account reads and the GO JWT carries (docs/public-log.md).
      const c = committed(
        {
          kind: 'prefinality',
          decision,
          ...(fuseId !== undefined ? { subject: fuseId } : {}),
          fingerprint: transfer_hash,
          ...(demo ? { demo: true } : {}),
          data: {
            rail: req.rail,
            rule: ev.rule.id,
            transfer: req.transfer,
            ...(req.context?.tool ? { tool: req.context.tool } : {}),
            ...(decision === 'GO' ? { jti, exp: new Date(exp * 1000).toISOString() } : {}),
            ...(review ? { review_id: review.id } : {}),
            ...(approval ? { review: approvalLink(approval) } : {}),
          },
        },
        ['data.transfer'],
      );
      const transferOpening = c.openings[0]!;
      const act: ReceiptInput = { ...c.input, ...(caller.keyId ? { key_id: caller.keyId } : {}) };
      // A paid call is decided unpaid: the pipeline settles only a GO (the declaration's settlesOn) and then
      // names the settled payment in the receipt and the answer in place of this.
      const unpaid = caller.payment ? { ...paymentFacts(caller.payment), settled: false } : undefined;
      const input: ReceiptInput = unpaid ? { ...act, data: { ...act.data, payment: unpaid } } : act;
      // The rules say which SKU a decision charges (GO the hop toll, NO_GO and HOLD the NAP hold); the declaration prices it.
      // A payer's line is its price (what it pays instead; charged to no key, api/act.ts).
      const line = demo ? undefined : bill(meteringOf(decision).sku);
      const charges: ActCharge[] = line && caller.keyId ? [{ keyId: caller.keyId, ...line }] : [];
      // The opening is kept for the key's account. A demo or a keyless payer has no account to read it:
      // its caller holds the salt from the answer (and, on a GO, the JWT).
      const keepOpenings = caller.keyId && !caller.payment && caller.viewer.key;
      const receipt = state.receipt(ctx, input, { charges, ...(keepOpenings ? { openings: c.openings } : {}) });
      // Only GO carries a JWT (SPEC 2.2); it names the log receipt, so it is signed second.
      const jwt =
        decision === 'GO'
          ? signPrefinalityJwt(key, {
              iss: ctx.config.BASE_URL,
              sub: caller.keyId ?? 'demo',
              iat,
              exp,
              jti,
              decision,
              rail: req.rail,
              transfer_hash,
              transfer: req.transfer,
              transfer_commitment: transferOpening.commitment,
              transfer_salt: transferOpening.salt,
              rule: ev.rule.id,
              receipt_id: receipt.receipt_id,
              ...(demo ? { demo: true } : {}),
              ...(approval
                ? {
                    review: {
                      id: approval.id,
                      hold_receipt_id: approval.hold_receipt_id,
                      approval_receipt_id: approval.decision_receipt_id!,
                      approved_by: approval.decided_by!,
                    },
                  }
                : {}),
            })
          : undefined;
      const body = {
        object: 'prefinality_decision',
        decision,
        rail: req.rail,
        rule: ev.rule,
        detail: approval ? `${ev.detail}; cleared by review ${approval.id}` : ev.detail,
        fields: ev.fields,
        transfer_hash,
        transfer_commitment: transferOpening.commitment,
        transfer_salt: transferOpening.salt,
        receipt_id: receipt.receipt_id,
        verify_url: receipt.verify_url,
        ...(jwt
          ? { receipt_jwt: jwt, jti, expires_at: new Date(exp * 1000).toISOString(), verify: ctx.config.BASE_URL + VERIFY_PATH }
          : {}),
        ...(review ? holdFields(ctx, review) : {}),
        ...(approval ? approvalFields(approval) : {}),
        demo,
        charge: line ? chargeView(line) : null,
        ...(unpaid ? { payment: { ...unpaid, detail: `not settled: only a GO is paid; this ${decision} cost nothing` } } : {}),
      };
      // A key's GO clears exposure, as a PERMIT does on the execute gate (a payer has no month to clear it in).
      const cleared = line && caller.keyId && !caller.payment && decision === 'GO' ? goExposureMicros(req.transfer) : undefined;
      const clearAct: ClearActRow | undefined =
        cleared !== undefined ? { keyId: caller.keyId!, decision: 'GO', exposureMicros: Number(cleared), at: now } : undefined;
      // What a reviewer is shown of a HOLD: the transfer in clear (the account's own), the rule and why.
      const summary = () => ({
        rail: req.rail,
        transfer: req.transfer,
        rule: ev.rule.id,
        detail: ev.detail,
        ...(fuseId !== undefined ? { fuse_id: fuseId } : {}),
        ...(req.context?.tool ? { tool: req.context.tool } : {}),
      });
      return {
        writes: { receipt, records: clearAct ? [record(CLEAR_COUNTERS, clearAct)] : [] },
        reply: reply(body, DECISION_STATUS[decision]),
        summary,
        held: decision === 'HOLD',
        cleared: approval !== undefined,
      };
    };
    // Decided again when a paid call committed unpaid found its decision turned into one it pays for (api/act.ts).
    return commitHeldAct(event, ctx, undefined, held, req.review_id, { fuseId }, { decide: decideUnderLock });
  }

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: EVALUATE_PATH,
      auth: 'key',
      ...evaluateDoc,
      // SPEC 4.1: the body is refused (400) before the Idempotency-Key is looked at.
      act: { bodyFirst: true, lane: true },
    },
    ({ input: req, key, event, bill, payment }) => {
      // A payment instead of a key: the payer owns no fuse (it sees the public's) and pays instead of a toll.
      return decide(event, req, { keyId: key.id, viewer: callerOf(key), ...(payment ? { payment } : {}) }, bill);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: DEMO_EVALUATE_PATH,
      tool: 'demo_prefinality_evaluate',
      summary: 'Public pre-finality evaluate: rate limited, receipts marked demo, never charged',
      auth: 'demo',
      tag: 'demo',
      body: evaluateRequestSchema,
      responses: decisionResponses,
      problems: [429],
    },
    async ({ input: req, event }) => {
      return await decide(event, req, { keyId: undefined, viewer: callerOf(undefined) }, UNCHARGED);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: VERIFY_PATH,
      tool: 'prefinality_verify',
      summary: 'Is a pre-finality receipt JWT valid, and why not',
      auth: 'public',
      tag: 'prefinality',
      body: verifyRequestSchema,
    },
    async ({ input }) => {
      const { receipt } = input;
      const r = await verifyPrefinalityJwt(receipt, ctx.keyring, { issuer: ctx.config.BASE_URL });
      return reply(
        r.valid
          ? { object: 'prefinality_verification', valid: true, header: r.header, claims: r.claims }
          : { object: 'prefinality_verification', valid: false, reason: r.reason, detail: r.detail },
      );
    },
  );

  // x402 too: a keyless payer gates the GO receipts it paid for (their `sub` is its payer id, rtpGateReasons). Like evaluate,
  // only a pass is settled: whether a receipt clears depends on who presents it, which a price asked before the payment cannot know.
  const rtpGateX402: X402Doc = {
    sku: meteringOf('rtp_gate_pass').sku,
    when: 'no API key; settled only when the receipt clears the order (GO, 200)',
    settlesOn: [200],
  };
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: RTP_GATE_PATH,
      auth: 'key',
      tool: 'rtp_gate',
      summary: 'Does a GO receipt clear this RTP payment order (single use)',
      tag: 'prefinality',
      body: rtpGateRequestSchema,
      responses: {
        200: { description: 'GO: the receipt clears this payment order, once', schema: rtpGateBody },
        403: { description: 'NO_GO: the receipt does not clear it (reasons say why)', schema: rtpGateBody },
      },
      problems: [409, 422],
      charges: ['verify_attestation', 'hold'],
      x402: rtpGateX402,
      act: { bodyFirst: true },
    },
    async ({ input: { receipt: token, payment_order: order }, key, event, bill }) => {
      const orderHash = fingerprint(order);
      for (let attempt = 0; ; attempt++) {
        const v = await verifyPrefinalityJwt(token, ctx.keyring, { issuer: ctx.config.BASE_URL });
        const reasons: Array<{ code: string; detail: string; fields?: string[] }> = [];
        let jti: string | undefined;
        if (!v.valid) {
          reasons.push({ code: v.reason, detail: v.detail });
        } else {
          const c = v.claims;
          jti = c.jti;
          const used = (await receiptUse(ctx.ledger.read, c.jti)) !== undefined;
          reasons.push(...rtpGateReasons({ claims: c, order, keyId: key.id, used }));
        }
        const pass = reasons.length === 0;
        const charge = bill(meteringOf(pass ? 'rtp_gate_pass' : 'rtp_gate_refuse').sku);
        // The payment order is the PSP's customer data: the public entry holds a commitment to it, not its plain hash.
        const c = committed(
          {
            kind: 'prefinality_rtp_gate',
            decision: pass ? 'GO' : 'NO_GO',
            ...(jti ? { subject: jti } : {}),
            fingerprint: orderHash,
            data: { reasons: reasons.map((r) => r.code), order },
          },
          ['data.order'],
        );
        const input: ReceiptInput = { ...c.input, key_id: key.id };
        try {
          return await commitAct(event, ctx, key, {
            run: async (tx, state) => {
              // The claim is first-wins: a concurrent presentation that lost it is decided again (and refused as used).
              if (pass && jti && !(await claimReceiptUse(tx, jti, orderHash, key.id))) throw new StateChanged();
              const receipt = state.receipt(ctx, input, { charges: [{ keyId: key.id, ...charge }], openings: c.openings });
              const body = {
                object: 'rtp_gate_result',
                pass,
                decision: pass ? 'GO' : 'NO_GO',
                ...(jti ? { jti } : {}),
                order_hash: orderHash,
                reasons,
                mismatched_fields: reasons.flatMap((r) => (r.code === 'order_mismatch' ? (r.fields ?? []) : [])),
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
                charge: chargeView(charge),
              };
              return { writes: { receipt }, reply: reply(body, pass ? 200 : 403) };
            },
          });
        } catch (e) {
          if (retryIfStale(e, attempt)) continue;
          throw e;
        }
      }
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: JWKS_PATH,
      summary: 'Ed25519 key set (current and retired) that verifies receipt JWTs',
      auth: 'public',
      tag: 'discovery',
    },
    () =>
      reply({ keys: ctx.keyring.all.map((k) => ({ ...k.jwk })) }, 200, {
        'cache-control': 'public, max-age=300',
        'access-control-allow-origin': '*',
      }),
  );

  // The manifest's endpoints and statuses, as the routes declare them (registered above).
  const declared = (path: string) => router.routes.find((r) => r.method === 'POST' && r.path === path)!;
  const authOf = (r: RouteRecord) => (r.doc?.auth !== 'key' ? 'none' : r.paidInPlaceOfKey ? 'key or x402 payment' : 'key');
  const manifestEndpoints = () =>
    Object.fromEntries(
      Object.entries({ evaluate: EVALUATE_PATH, demo: DEMO_EVALUATE_PATH, verify: VERIFY_PATH, rtp_gate: RTP_GATE_PATH }).map(
        ([id, path]) => {
          const r = declared(path);
          return [id, { method: r.method, url: ctx.config.BASE_URL + path, auth: authOf(r) }];
        },
      ),
    );
  const manifestStatuses = () => {
    const doc = declared(EVALUATE_PATH).doc!;
    const codes = [...Object.keys(doc.responses ?? {}).map(Number), ...(doc.problems ?? [])].filter(
      (c) => EVALUATE_STATUSES[c] !== undefined,
    );
    return Object.fromEntries(codes.sort((a, b) => a - b).map((c) => [String(c), EVALUATE_STATUSES[c]!]));
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: MANIFEST_PATH,
      summary: 'Pre-finality manifest: rails, statuses, rules, receipt format',
      auth: 'public',
      tag: 'discovery',
    },
    () => {
      const base = ctx.config.BASE_URL;
      return toResponse(
        reply({
          schema: 'fusegate-prefinality-v1',
          base_url: base,
          rails: RAILS.map((id) => ({ id, required_transfer_fields: RULES.required_fields[id] ?? [] })),
          endpoints: manifestEndpoints(),
          statuses: manifestStatuses(),
          receipt: {
            format: 'JWT',
            typ: PREFINALITY_TYP,
            alg: [...ACCEPTED_ALGS],
            claims: [...REQUIRED_CLAIMS, 'receipt_id', 'transfer_commitment', 'transfer_salt', 'demo'],
            ttl_seconds: ctx.config.PREFINALITY_RECEIPT_TTL_SECONDS,
            jwks_uri: base + JWKS_PATH,
            verify_url: base + VERIFY_PATH,
          },
          rules: RULES.rules.map((r) => ({ id: r.id, decision: r.decision, description: r.description })),
          x402_configured: paid !== undefined,
          ...(paid ? { x402: paid.requirementsDocument(priceInAtomicUnits(fixedMicros(route), paid.decimals)) } : {}),
        }),
        { 'cache-control': 'public, max-age=60', 'access-control-allow-origin': '*' },
      );
    },
  );
}

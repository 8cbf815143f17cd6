/**
 * Pre-finality clearance (SPEC 1, 2.2, 4.1, 5.4, 7):
 *   POST /v1/prefinality/evaluate      key, or an x402 payment: 200 GO + JWT, 401, 402, 403 NO_GO, 409 HOLD
 *   POST /demo/prefinality/evaluate    no key, rate limited, receipts marked demo, never charged
 *   POST /v1/prefinality/verify        no auth: is this receipt JWT valid, and why not
 *   POST /v1/prefinality/rtp/gate      key: does the receipt clear this payment order (once)
 *   GET  /.well-known/prefinality-jwks.json, /.well-known/prefinality.json
 * The rules are in src/domain/prefinality.ts (data in src/content/prefinality-rules.json).
 */
import type { Client, Transaction } from '@libsql/client';
import type { H3Event } from 'h3';
import { z } from 'zod';
import { tollMicros } from '../../catalog/tolls.ts';
import type { Config } from '../../config.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import {
  ACCEPTED_ALGS,
  PREFINALITY_TYP,
  REQUIRED_CLAIMS,
  signPrefinalityJwt,
  verifyPrefinalityJwt,
} from '../../crypto/prefinality-jwt.ts';
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
  type Facts,
} from '../../domain/prefinality.ts';
import {
  decodeX402Header,
  encodeX402Header,
  paymentRequiredV1,
  paymentRequiredV2,
  priceInAtomicUnits,
  type X402Resource,
  type X402Settings,
} from '../../domain/x402.ts';
import { newId, numericDate } from '../../ids.ts';
import { insertClearAct } from '../../ledger/clear.ts';
import { getFuse } from '../../ledger/fuses.ts';
import { recordCharge } from '../../ledger/meter.ts';
import { claimReceiptUse, receiptUse } from '../../ledger/prefinality.ts';
import { recordReceipt, signReceipt } from '../../ledger/receipts.ts';
import { optionalKey, requireKey } from '../auth.ts';
import { readBody } from '../body.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { commitReply, idempotent } from '../idempotency.ts';
import { Problem } from '../problem.ts';
import { enforceDemoRateLimit } from '../rate-limit.ts';
import { reply, toResponse, type Reply } from '../reply.ts';
import type { Router } from '../router.ts';

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
  receipt_id: z.string(),
  verify_url: z.string(),
  demo: z.boolean(),
  charge: chargeSchema.nullable(),
});
const decisionResponses = {
  200: { description: 'GO, with a signed receipt JWT', schema: decisionBody },
  403: { description: 'NO_GO: do not commit', schema: decisionBody },
  409: { description: 'HOLD: do not commit until a review clears it', schema: decisionBody },
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

/** How many times a decision is re-taken when the ledger changed under it (a fuse died, a receipt was used). */
const STALE_RETRIES = 3;

/** Thrown inside a transaction when a fact the decision relied on changed since it was read. */
class StaleFacts extends Error {
  override name = 'StaleFacts';
}

/** The x402 settings, or undefined when x402 is not configured (the default). */
export function x402SettingsOf(c: Config): X402Settings | undefined {
  if (!c.X402_PAY_TO || !c.X402_NETWORK || !c.X402_ASSET) return undefined;
  return {
    payTo: c.X402_PAY_TO,
    network: c.X402_NETWORK,
    asset: c.X402_ASSET,
    assetName: c.X402_ASSET_NAME,
    assetVersion: c.X402_ASSET_VERSION,
    decimals: c.X402_ASSET_DECIMALS,
    maxTimeoutSeconds: c.X402_MAX_TIMEOUT_SECONDS,
  };
}

const verifyRequestSchema = z.strictObject({ receipt: z.string().min(1).max(16384) });
const rtpGateRequestSchema = z.strictObject({ receipt: z.string().min(1).max(16384), payment_order: paymentOrderSchema });

interface Caller {
  /** undefined for the public demo. */
  keyId: string | undefined;
}

export function registerPrefinalityRoutes(router: Router, ctx: AppContext): void {
  const x402 = x402SettingsOf(ctx.config);
  // The x402 price is the GO toll, so no price is written twice; an inexact conversion stops start-up.
  const x402Price = x402 ? priceInAtomicUnits(tollMicros(meteringOf('GO').sku), x402.decimals) : undefined;
  const resource: X402Resource = {
    url: ctx.config.BASE_URL + EVALUATE_PATH,
    description: 'Pre-finality clearance: GO / NO_GO / HOLD before an irreversible commit, with a signed JWT receipt',
    mimeType: 'application/json',
  };

  /** 401 without x402; 402 in the x402 wire format with it. A presented payment is never accepted (no facilitator). */
  function refuseUnauthenticated(event: H3Event): Response {
    const presented = event.req.headers.get('payment-signature') ?? event.req.headers.get('x-payment');
    if (!x402 || x402Price === undefined) {
      throw new Problem({
        status: 401,
        code: presented !== null ? 'x402_not_configured' : 'missing_key',
        title: 'Unauthorized',
        detail:
          (presented !== null ? 'x402 payments are not configured on this service; ' : '') +
          `send an API key ("Authorization: Bearer <key>") or use the public demo POST ${DEMO_EVALUATE_PATH}`,
        headers: { 'www-authenticate': 'Bearer realm="fusegate"' },
      });
    }
    let error = 'PAYMENT-SIGNATURE header is required';
    if (presented !== null) {
      error =
        decodeX402Header(presented) === undefined
          ? 'the payment header is not base64-encoded JSON'
          : 'payment not accepted: verifying and settling an x402 payment needs a facilitator, which this service does not call; use an API key';
    }
    const headers = new Headers({
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'payment-required': encodeX402Header(paymentRequiredV2(x402, resource, x402Price, error)),
      'access-control-expose-headers': 'PAYMENT-REQUIRED',
    });
    return new Response(JSON.stringify(paymentRequiredV1(x402, resource, x402Price, error)), { status: 402, headers });
  }

  /** The state of the fuse named in the context, as the caller may see it (its own fuses; drill fuses for the demo). */
  async function fuseFact(db: Client | Transaction, req: EvaluateRequest, caller: Caller): Promise<Facts['fuse']> {
    const id = req.context?.fuse_id;
    if (id === undefined) return undefined;
    const fuse = await getFuse(db, id);
    const visible = fuse && fuse.key_id === (caller.keyId ?? '');
    return { id, state: visible ? fuse.state : undefined };
  }

  /** Decides, signs (outside the write), then commits receipt + charge + answer in one transaction. */
  async function decide(event: H3Event, req: EvaluateRequest, caller: Caller): Promise<Reply> {
    for (let attempt = 0; ; attempt++) {
      const fuse = await fuseFact(ctx.ledger.read, req, caller);
      const now = new Date();
      const ev = evaluatePrefinality(req, { fuse, now });
      const demo = caller.keyId === undefined;
      const transfer_hash = fingerprint(req.transfer);
      const key = ctx.keyring.current;
      const iat = numericDate(now);
      const exp = iat + ctx.config.PREFINALITY_RECEIPT_TTL_SECONDS;
      const jti = newId('pfr');
      const receipt = await signReceipt(ctx, {
        kind: 'prefinality',
        decision: ev.decision,
        subject: req.context?.fuse_id ?? transfer_hash,
        ...(caller.keyId ? { key_id: caller.keyId } : {}),
        fingerprint: transfer_hash,
        ...(demo ? { demo: true } : {}),
        data: { rail: req.rail, rule: ev.rule.id, ...(ev.decision === 'GO' ? { jti, exp: new Date(exp * 1000).toISOString() } : {}) },
      });
      // Only GO carries a JWT (SPEC 2.2); it names the log receipt, so it is signed second.
      const jwt =
        ev.decision === 'GO'
          ? await signPrefinalityJwt(key, {
              iss: ctx.config.BASE_URL,
              sub: caller.keyId ?? 'demo',
              iat,
              exp,
              jti,
              decision: ev.decision,
              rail: req.rail,
              transfer_hash,
              transfer: req.transfer,
              rule: ev.rule.id,
              receipt_id: receipt.receipt_id,
              ...(demo ? { demo: true } : {}),
            })
          : undefined;
      const meter = demo ? undefined : meteringOf(ev.decision);
      const micros = meter ? tollMicros(meter.sku) : 0;
      const body = {
        object: 'prefinality_decision',
        decision: ev.decision,
        rail: req.rail,
        rule: ev.rule,
        detail: ev.detail,
        fields: ev.fields,
        transfer_hash,
        receipt_id: receipt.receipt_id,
        verify_url: receipt.verify_url,
        ...(jwt ? { receipt_jwt: jwt, jti, expires_at: new Date(exp * 1000).toISOString(), verify: ctx.config.BASE_URL + VERIFY_PATH } : {}),
        demo,
        charge: meter ? chargeView({ sku: meter.sku, amountMicros: micros, nap: meter.nap }) : null,
      };
      try {
        return await commitReply(event, ctx, async (tx) => {
          if (fuse && (await fuseFact(tx, req, caller))?.state !== fuse.state) throw new StaleFacts();
          await recordReceipt(tx, receipt);
          if (meter && caller.keyId) {
            await recordCharge(tx, { keyId: caller.keyId, sku: meter.sku, amountMicros: micros, nap: meter.nap, ref: receipt.receipt_id });
            // A GO clears exposure, as a PERMIT does on the execute gate.
            const cleared = ev.decision === 'GO' ? goExposureMicros(req.transfer) : undefined;
            if (cleared !== undefined) {
              const at = now.toISOString();
              await insertClearAct(tx, { receiptId: receipt.receipt_id, keyId: caller.keyId, vertical: 'prefinality', fuseId: req.context?.fuse_id ?? '', decision: 'GO', exposureMicros: Number(cleared), month: at.slice(0, 7), createdAt: at });
            }
          }
          return reply(body, DECISION_STATUS[ev.decision]);
        });
      } catch (e) {
        if (e instanceof StaleFacts && attempt < STALE_RETRIES) continue;
        throw e;
      }
    }
  }

  router.post(EVALUATE_PATH, async (event) => {
    const key = await optionalKey(event, ctx);
    if (!key) return refuseUnauthenticated(event);
    const req = await readBody(event, evaluateRequestSchema, ctx.config.MAX_BODY_BYTES);
    return idempotent(event, ctx, key, () => decide(event, req, { keyId: key.id }));
  }, { summary: 'Pre-finality clearance: GO (200, signed receipt JWT), NO_GO (403) or HOLD (409) before an irreversible commit', auth: 'key', tag: 'prefinality', body: evaluateRequestSchema, responses: decisionResponses, problems: [401, 402, 422], charges: ['execute_gate', 'hold'] });

  router.post(DEMO_EVALUATE_PATH, async (event) => {
    await enforceDemoRateLimit(event, ctx);
    const req = await readBody(event, evaluateRequestSchema, ctx.config.MAX_BODY_BYTES);
    return toResponse(await decide(event, req, { keyId: undefined }));
  }, { summary: 'Public pre-finality evaluate: rate limited, receipts marked demo, never charged', auth: 'demo', tag: 'demo', body: evaluateRequestSchema, responses: decisionResponses, problems: [429] });

  router.post(VERIFY_PATH, async (event) => {
    const { receipt } = await readBody(event, verifyRequestSchema, ctx.config.MAX_BODY_BYTES);
    const r = await verifyPrefinalityJwt(receipt, ctx.keyring, { issuer: ctx.config.BASE_URL });
    return toResponse(
      reply(
        r.valid
          ? { object: 'prefinality_verification', valid: true, header: r.header, claims: r.claims }
          : { object: 'prefinality_verification', valid: false, reason: r.reason, detail: r.detail },
      ),
    );
  }, { summary: 'Is a pre-finality receipt JWT valid, and why not', auth: 'public', tag: 'prefinality', body: verifyRequestSchema });

  router.post(RTP_GATE_PATH, async (event) => {
    const key = await requireKey(event, ctx);
    const { receipt: token, payment_order: order } = await readBody(event, rtpGateRequestSchema, ctx.config.MAX_BODY_BYTES);
    return idempotent(event, ctx, key, async () => {
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
        const meter = meteringOf(pass ? 'rtp_gate_pass' : 'rtp_gate_refuse');
        const micros = tollMicros(meter.sku);
        const receipt = await signReceipt(ctx, {
          kind: 'prefinality_rtp_gate',
          decision: pass ? 'GO' : 'NO_GO',
          ...(jti ? { subject: jti } : {}),
          key_id: key.id,
          fingerprint: orderHash,
          data: { reasons: reasons.map((r) => r.code) },
        });
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
          charge: chargeView({ sku: meter.sku, amountMicros: micros, nap: meter.nap }),
        };
        try {
          return await commitReply(event, ctx, async (tx) => {
            // The claim is first-wins: a concurrent presentation that lost it is decided again (and refused as used).
            if (pass && jti && !(await claimReceiptUse(tx, jti, orderHash, key.id))) throw new StaleFacts();
            await recordReceipt(tx, receipt);
            await recordCharge(tx, { keyId: key.id, sku: meter.sku, amountMicros: micros, nap: meter.nap, ref: receipt.receipt_id });
            return reply(body, pass ? 200 : 403);
          });
        } catch (e) {
          if (e instanceof StaleFacts && attempt < STALE_RETRIES) continue;
          throw e;
        }
      }
    });
  }, { summary: 'Does a GO receipt clear this RTP payment order (single use)', auth: 'key', tag: 'prefinality', body: rtpGateRequestSchema, responses: { 200: { description: 'GO: the receipt clears this payment order, once', schema: rtpGateBody }, 403: { description: 'NO_GO: the receipt does not clear it (reasons say why)', schema: rtpGateBody } }, problems: [409, 422] });

  router.get(JWKS_PATH, () =>
    toResponse(reply({ keys: ctx.keyring.all.map((k) => ({ ...k.jwk })) }), {
      'cache-control': 'public, max-age=300',
      'access-control-allow-origin': '*',
    }),
    { summary: 'Ed25519 key set (current and retired) that verifies receipt JWTs', auth: 'public', tag: 'discovery' },
  );

  router.get(MANIFEST_PATH, () => {
    const base = ctx.config.BASE_URL;
    return toResponse(
      reply({
        schema: 'fusegate-prefinality-v1',
        base_url: base,
        rails: RAILS.map((id) => ({ id, required_transfer_fields: RULES.required_fields[id] ?? [] })),
        endpoints: {
          evaluate: { method: 'POST', url: base + EVALUATE_PATH, auth: x402 ? 'key or x402 payment' : 'key' },
          demo: { method: 'POST', url: base + DEMO_EVALUATE_PATH, auth: 'none' },
          verify: { method: 'POST', url: base + VERIFY_PATH, auth: 'none' },
          rtp_gate: { method: 'POST', url: base + RTP_GATE_PATH, auth: 'key' },
        },
        statuses: {
          '200': 'GO, with a signed receipt JWT',
          '401': 'API key or x402 payment required',
          '402': 'x402 stablecoin payment required (only when x402 is configured)',
          '403': 'NO_GO, fail closed',
          '409': 'HOLD, human review',
        },
        receipt: {
          format: 'JWT',
          typ: PREFINALITY_TYP,
          alg: [...ACCEPTED_ALGS],
          claims: [...REQUIRED_CLAIMS, 'receipt_id', 'demo'],
          ttl_seconds: ctx.config.PREFINALITY_RECEIPT_TTL_SECONDS,
          jwks_uri: base + JWKS_PATH,
          verify_url: base + VERIFY_PATH,
        },
        rules: RULES.rules.map((r) => ({ id: r.id, decision: r.decision, description: r.description })),
        x402_configured: x402 !== undefined,
        ...(x402 && x402Price ? { x402: paymentRequiredV2(x402, resource, x402Price, '') } : {}),
      }),
      { 'cache-control': 'public, max-age=60', 'access-control-allow-origin': '*' },
    );
  }, { summary: 'Pre-finality manifest: rails, statuses, rules, receipt format', auth: 'public', tag: 'discovery' });
}

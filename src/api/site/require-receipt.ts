/**
 * RR-1 on this service (SPEC 2.4): a demo irreversible act protected by the
 * require-receipt middleware of src/rr1 (the same piece other services
 * mount). Receipts are checked against our own key set and claimed once in
 * the database; a challenge (428) to a caller that sent an API key is
 * metered at the catalog's challenge toll, with a receipt like every charge.
 */
import { HTTPResponse } from 'h3';
import { z } from 'zod';
import { DATA, catalogByKey } from '../../catalog/catalogs.ts';
import { verifyReceiptToken } from '../../crypto/receipt.ts';
import { logVerifierKeys } from '../../ledger/checkpoint.ts';
import { RECEIPTS_LOG } from '../../ledger/seals.ts';
import type { Receipt } from '../../ledger/receipts.ts';
import { nowIso } from '../../ids.ts';
import { claimRr1ReceiptUse } from '../../ledger/rr1.ts';
import { requireReceipt } from '../../rr1/middleware.ts';
import { optionalKey } from '../auth.ts';
import type { AppContext } from '../context.ts';
import { chargeView } from '../charge.ts';
import { reply } from '../reply.ts';
import type { RouteDoc, Router } from '../router.ts';
import { billOf } from '../charges.ts';
import { operation, type Answer } from '../operation.ts';

export const RR1_DEMO_ACT = DATA.agent_actions.actions[0]!;
/** Meter SKU of a challenge (ours; the toll is the RR-1 catalog's challenge_toll_usd). */
export const CHALLENGE_SKU = 'rr1_challenge';

export const demoActRequest = z.looseObject({}).describe('any JSON body: the demo act only records that it ran');
export const demoActResponse = z.object({
  acted: z.literal(true),
  act: z.string(),
  receipt_id: z.string().describe('the receipt this act consumed'),
  acted_at: z.string(),
});

export function registerRequireReceiptRoutes(router: Router, ctx: AppContext): void {
  // The demo act's declaration: a keyed caller's 428 is a charged challenge, billed from it.
  const demoDoc: RouteDoc = {
    summary: `RR-1 demo irreversible act (${RR1_DEMO_ACT.act}): 428 with Receipt-Required unless a fresh, unused PERMIT receipt for it from this gate is sent in Gate-Receipt`,
    auth: 'demo',
    tag: 'require_receipt',
    body: demoActRequest,
    response: demoActResponse,
    problems: [428, 429],
    charges: [CHALLENGE_SKU],
    chargeRules: { [CHALLENGE_SKU]: { price: 'rr1_challenge' } },
    example: { invoice: 'INV-2026-0042', amount: '120.00', payee: 'acme' },
  };
  const bill = billOf(`POST ${RR1_DEMO_ACT.path}`, demoDoc.charges, demoDoc.chargeRules);
  const guard = requireReceipt({
    act: RR1_DEMO_ACT.act,
    gate: ctx.config.BASE_URL,
    obtainUrl: ctx.config.SITE_URL + RR1_DEMO_ACT.obtain_path,
    // A JWS, or a receipt document proven in our receipts log (and checked against our witnesses): both offline.
    verify: async (token) => {
      const v = await verifyReceiptToken(token, {
        keys: ctx.keyring,
        logKeys: logVerifierKeys(ctx, RECEIPTS_LOG),
        ...(ctx.witnessPolicy ? { witnesses: ctx.witnessPolicy } : {}),
      });
      return v.valid ? { valid: true, payload: v.payload } : v;
    },
    claim: (receiptId) => ctx.ledger.write((tx) => claimRr1ReceiptUse(tx, receiptId, RR1_DEMO_ACT.act, nowIso())),
    onChallenge: async (event, reason) => {
      const key = await optionalKey(event, ctx).catch(() => undefined);
      if (!key) return;
      // Every charge has a receipt (so a clearing attestation covers it): the challenge is sealed too.
      const charge = { keyId: key.id, ...bill(CHALLENGE_SKU) };
      const receipt = await ctx.ledger.act<Receipt>({
        needs: {},
        decide: (state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'rr1_challenge',
              decision: 'RECEIPT_REQUIRED',
              subject: RR1_DEMO_ACT.path,
              key_id: key.id,
              data: { act: RR1_DEMO_ACT.act, status: 428, reason },
            },
            { signed: true, charges: [charge] },
          );
          return { writes: { receipt }, result: receipt };
        },
      });
      // The charged refusal names what it charged and the receipt that seals the charge.
      return { charge: chargeView(charge), receipt_id: receipt.receipt_id, verify_url: receipt.verify_url };
    },
  });

  // The manifest, live: the static build bakes the URLs of build time; this one names the running gate.
  const manifest = catalogByKey('agent_actions');
  const urls = { site: ctx.config.SITE_URL.replace(/\/+$/, ''), gate: ctx.config.BASE_URL.replace(/\/+$/, '') };
  const manifestBody = JSON.stringify(manifest.build(urls));
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: manifest.path,
      summary: 'The RR-1 agent-actions manifest: the irreversible acts of this service and how to get a receipt for them',
      auth: 'public',
      tag: 'require_receipt',
      response: manifest.schema,
    },
    () =>
      new HTTPResponse(manifestBody, {
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'cache-control': 'public, max-age=300',
          'access-control-allow-origin': '*',
        },
      }),
  );

  // Any JSON body, or none: the demo act only records that it ran.
  operation(
    router,
    ctx,
    { method: 'POST', path: RR1_DEMO_ACT.path, ...demoDoc, optionalBody: true },
    ({ event }) =>
      // The middleware answers its challenge, or what the act answers.
      guard(event, () => {
        const rr1 = event.context.rr1 as { receipt_id: string };
        return reply({ acted: true, act: RR1_DEMO_ACT.act, receipt_id: rr1.receipt_id, acted_at: nowIso() });
      }) as Promise<Answer>,
  );
}

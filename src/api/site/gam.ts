/**
 * GAM credits (SPEC 2.5 layer 8; our design, docs/gam-credits.md):
 *   POST /api/v1/gam/credits/purchase   key (operator)   buy a clearing window: charges its price, grants its GAM credits for its weeks
 *   GET  /api/v1/gam/credits/balance    key              the balance: granted, drawn by the key's charges since, remaining
 */
import { z } from 'zod';
import { DATA } from '../../catalog/catalogs.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { newId, nowIso } from '../../ids.ts';
import { activeGrant, gamBalance, insertGrant, type GamBalance } from '../../ledger/gam.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { Problem } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

const WINDOWS = DATA.clearing.skus;
const WINDOW_SKUS = WINDOWS.map((w) => w.id);
const WEEK_MS = 7 * 86_400_000;

export const purchaseRequest = z.strictObject({
  sku: z.enum(WINDOW_SKUS as [string, ...string[]]).describe('a clearing window of the clearing catalog'),
});

/** The balance as shown (GET balance, /v1/me). */
export function balanceView(b: GamBalance | undefined) {
  if (!b) return null;
  return {
    sku: b.grant.sku,
    granted_usd: formatUsd(b.grant.creditsMicros),
    granted_at: b.grant.grantedAt,
    expires_at: b.grant.expiresAt,
    charged_since_usd: formatUsd(b.chargedMicros),
    drawn_usd: formatUsd(b.drawnMicros),
    remaining_usd: formatUsd(b.remainingMicros),
    beyond_credits_usd: formatUsd(b.beyondMicros),
  };
}

export const keyGamBalance = (ctx: AppContext, keyId: string) => gamBalance(ctx.ledger.read, keyId, nowIso(), WINDOW_SKUS);

const grantResponse = z.looseObject({
  object: z.literal('gam_grant'),
  sku: z.string(),
  gam_credits_usd: z.string(),
  granted_at: z.string(),
  expires_at: z.string(),
  charge: chargeSchema,
  receipt_id: z.string(),
});

export function registerGamRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/gam/credits/purchase',
      auth: 'key',
      summary:
        "Buy a clearing window: charges its price and grants its GAM credits for the window's weeks; the key's charges after it draw on them",
      tool: 'gam_credits_purchase',
      tag: 'clearing',
      role: 'operator',
      body: purchaseRequest,
      response: grantResponse,
      responses: { 201: { description: 'The window is bought and its credits granted', schema: grantResponse } },
      problems: [409],
      charges: WINDOW_SKUS,
      chargeRules: Object.fromEntries(WINDOW_SKUS.map((sku) => [sku, { price: 'clearing_window' as const }])),
      x402: false,
      example: { sku: 'clearing_quarterly' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const w = WINDOWS.find((x) => x.id === b.sku)!;
      const at = new Date();
      const grantedAt = nowIso(at);
      const expiresAt = new Date(at.getTime() + w.weeks * WEEK_MS).toISOString();
      const line = { keyId: key.id, ...bill(w.id) };
      const credits = BigInt(usdToMicros(w.gam_credits_usd));
      return commitAct(event, ctx, key, {
        run: async (tx, state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'gam_grant',
              decision: 'GRANTED',
              subject: w.id,
              key_id: key.id,
              data: { gam_credits_usd: formatUsd(credits), expires_at: expiresAt },
            },
            { charges: [line] },
          );
          const held = await activeGrant(tx, key.id, grantedAt);
          if (held)
            throw new Problem({
              status: 409,
              code: 'window_active',
              title: 'Conflict',
              detail: `this key's ${held.sku} window runs until ${held.expiresAt}; nothing was charged`,
              extra: { expires_at: held.expiresAt },
            });
          await insertGrant(tx, {
            id: newId('gam'),
            keyId: key.id,
            sku: w.id,
            creditsMicros: credits,
            grantedAt,
            expiresAt,
            receiptId: receipt.receipt_id,
          });
          return {
            writes: { receipt },
            reply: reply(
              {
                object: 'gam_grant',
                sku: w.id,
                gam_credits_usd: formatUsd(credits),
                granted_at: grantedAt,
                expires_at: expiresAt,
                charge: chargeView(line),
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
              },
              201,
            ),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/gam/credits/balance',
      summary:
        "The key's GAM credits: granted by its clearing window, drawn by its charges since, remaining (null without a window in force)",
      auth: 'key',
      tag: 'clearing',
    },
    async ({ key }) => {
      return reply({ object: 'gam_balance', key_id: key.id, balance: balanceView(await keyGamBalance(ctx, key.id)) });
    },
  );
}

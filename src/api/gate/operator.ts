/**
 * Operator checkout (SPEC 1, 8.3; our reading in docs/pricing.md):
 *   POST /v1/operator/checkout   operator key   check out a closed UTC month of a key of the account: one production write, once
 * and the open month's running figures shown in GET /v1/me.
 *
 * A month owes the greater of OPERATOR_FLOOR_USD, 10 bps of its cleared
 * exposure (execute-gate PERMITs and pre-finality GOs) and 0.10 USD per hop;
 * its per-act charges count toward that, and the checkout charges the rest.
 */
import { commitAct } from '../act.ts';
import { z } from 'zod';
import { BPS_TIERS, monthOf, tierFor } from '../../domain/clear.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { OPERATOR_BPS } from '../../catalog/operator-prices.ts';
import { operatorCheckout, type OperatorCheckout } from '../../domain/pricing.ts';
import { nowIso } from '../../ids.ts';
import { monthClearBps, monthTotals, type MonthClearBps } from '../../ledger/clear.ts';
import {
  CHECKOUT_SKU,
  CLEAR_BPS_SKU,
  getCheckout,
  insertCheckout,
  monthCharged,
  monthHops,
  type CheckoutRow,
} from '../../ledger/operator.ts';
import { verifyUrl } from '../../ledger/receipts.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { notFound, Problem } from '../problem.ts';
import { getApiKey } from '../../ledger/api-keys.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { monthReviews, type MonthReviews } from '../../ledger/reviews.ts';
import { reviewStatementView } from './reviews.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

type Db = Parameters<typeof monthHops>[0];

const monthSchema = z.string().regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'a UTC month, YYYY-MM');
export const checkoutRequest = z.strictObject({
  month: monthSchema.describe('a closed UTC month (before the current one)'),
  key_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,80}$/, 'a key id such as key_…')
    .optional()
    .describe("the key whose month is checked out: any key of the caller's account (default: the calling key)"),
});

/** The formula's figures of one key and month, as of now. */
export async function operatorFigures(ctx: AppContext, db: Db, keyId: string, month: string) {
  const [hops, totals, charged] = await Promise.all([
    monthHops(db, keyId, month),
    monthTotals(db, month, keyId),
    monthCharged(db, keyId, month),
  ]);
  const c = operatorCheckout({
    floorMicros: BigInt(usdToMicros(ctx.config.OPERATOR_FLOOR_USD)),
    exposureMicros: totals.cleared_micros,
    hops,
    chargedMicros: charged,
  });
  return { hops, exposureMicros: totals.cleared_micros, checkout: c };
}

/** The month's bps fee on cleared exposure: accruing while the month is open, billed (`clear_bps`) by its checkout. */
export function clearBpsView(
  b: Pick<MonthClearBps, 'cleared_micros' | 'fee_micros'> & { tier: { id: string; bps: number } },
  billed: boolean,
) {
  return {
    sku: CLEAR_BPS_SKU,
    cleared_exposure_usd: formatUsd(b.cleared_micros),
    tier: { id: b.tier.id, bps: b.tier.bps },
    fee_usd: formatUsd(b.fee_micros),
    graduated: true,
    billed,
  };
}

function checkoutView(month: string, hops: number, exposureMicros: bigint, c: OperatorCheckout) {
  return {
    month,
    formula: 'the greater of the floor, 10 bps of cleared exposure and 0.10 USD per hop; per-act charges count toward it',
    floor_usd: formatUsd(c.floorMicros),
    bps: OPERATOR_BPS,
    per_hop_usd: '0.10',
    hops,
    cleared_exposure_usd: formatUsd(exposureMicros),
    terms: { floor_usd: formatUsd(c.floorMicros), bps_usd: formatUsd(c.bpsMicros), per_hop_usd: formatUsd(c.perHopMicros) },
    basis: c.basis,
    due_usd: formatUsd(c.dueMicros),
    charged_usd: formatUsd(c.chargedMicros),
    checkout_usd: formatUsd(c.checkoutMicros),
  };
}

/** The open month's operator checkout of a key, for GET /v1/me. */
export async function openCheckoutView(ctx: AppContext, keyId: string) {
  const month = monthOf();
  const [f, bps, reviews] = await Promise.all([
    operatorFigures(ctx, ctx.ledger.read, keyId, month),
    monthClearBps(ctx.ledger.read, keyId, month),
    monthReviews(ctx.ledger.read, keyId, month),
  ]);
  return {
    state: 'open' as const,
    ...checkoutView(month, f.hops, f.exposureMicros, f.checkout),
    clear_bps: clearBpsView(bps, false),
    reviews: reviewStatementView(reviews),
  };
}

/** A checkout as answered: the closed month's figures, and its reviews (shown, not part of the receipt: they cost nothing). */
function closedView(ctx: AppContext, row: CheckoutRow, reviews: MonthReviews) {
  const bps = { cleared_micros: row.exposureMicros, fee_micros: row.clearBpsMicros, tier: tierById(row.clearTier, row.exposureMicros) };
  return {
    object: 'operator_checkout',
    state: 'checked_out' as const,
    key_id: row.keyId,
    ...checkoutView(row.month, row.hops, row.exposureMicros, row),
    clear_bps: clearBpsView(bps, true),
    reviews: reviewStatementView(reviews),
    total_usd: formatUsd(row.checkoutMicros + row.clearBpsMicros),
    checked_out_at: row.createdAt,
    charge: chargeView({ sku: CHECKOUT_SKU, amountMicros: row.checkoutMicros }),
    charges: checkoutCharges(row).map(chargeView),
    receipt_id: row.receiptId,
    verify_url: verifyUrl(ctx, row.receiptId),
  };
}

/** The month's tier as billed (checkouts before 0230 recorded none: the tier of the exposure). */
function tierById(id: string | null, exposureMicros: bigint) {
  return BPS_TIERS.find((t) => t.id === id) ?? tierFor(exposureMicros);
}

/** The meter lines of a checkout: the month's bps fee (when it cleared anything), then the operator true-up. */
function checkoutCharges(row: CheckoutRow): Array<{ keyId: string; sku: string; amountMicros: bigint }> {
  return [
    ...(row.exposureMicros > 0n ? [{ keyId: row.keyId, sku: CLEAR_BPS_SKU, amountMicros: row.clearBpsMicros }] : []),
    { keyId: row.keyId, sku: CHECKOUT_SKU, amountMicros: row.checkoutMicros },
  ];
}

/** 422: a month this key cannot check out (not begun, or before the key existed). */
function notCheckable(month: string, detail: string, extra: Record<string, unknown> = {}): Problem {
  return new Problem({
    status: 422,
    code: 'month_not_checkable',
    title: 'Unprocessable Content',
    detail,
    extra: { month, errors: [{ field: 'month', message: detail }], ...extra },
  });
}

const checkoutResponse = z.looseObject({
  object: z.literal('operator_checkout'),
  month: z.string(),
  due_usd: z.string(),
  checkout_usd: z.string(),
  charge: chargeSchema,
  receipt_id: z.string(),
});

export function registerOperatorRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/operator/checkout',
      auth: 'key',
      tool: 'operator_checkout',
      summary:
        "Operator checkout of a closed UTC month of a key of the account (our reading of SPEC 8.3; an operator key): one production write, once; charges what the formula owes beyond the month's per-act charges",
      tag: 'system',
      role: 'operator',
      body: checkoutRequest,
      response: checkoutResponse,
      responses: {
        201: { description: 'The month is checked out (the one write)', schema: checkoutResponse },
        200: { description: 'The month was already checked out: the same checkout', schema: checkoutResponse },
      },
      problems: [404, 409, 422],
      charges: [CLEAR_BPS_SKU, CHECKOUT_SKU],
      chargeRules: { [CLEAR_BPS_SKU]: { amount: 'clear_bps_fee' }, [CHECKOUT_SKU]: { amount: 'operator_checkout' } },
      x402: false,
      example: { month: '2026-10' },
      act: {},
    },
    async ({ input: { month, key_id }, key: caller, event, bill }) => {
      const key = key_id === undefined || key_id === caller.id ? caller : await getApiKey(ctx.ledger.read, key_id);
      // Another account's key is answered exactly like a missing one.
      if (!key || ownerId(key) !== ownerId(caller)) throw notFound(`no key ${key_id} in this account`, 'unknown_key');
      const current = monthOf();
      if (month > current) throw notCheckable(month, `${month} has not begun: a month is checked out once it is over`);
      if (month === current) {
        throw new Problem({
          status: 409,
          code: 'period_open',
          title: 'Conflict',
          detail: `${month} is not closed yet: a month is checked out once it is over`,
          extra: { month },
        });
      }
      // A closed month's reviews are read before the lock: they cost nothing and change no figure.
      const [done, reviews] = await Promise.all([
        getCheckout(ctx.ledger.read, key.id, month),
        monthReviews(ctx.ledger.read, key.id, month),
      ]);
      if (done) return reply(closedView(ctx, done, reviews));
      const f = await operatorFigures(ctx, ctx.ledger.read, key.id, month);
      // A key exists from its creation month; a month before it is checked out only when the
      // ledger holds the key's acts in it (a key carried over from an earlier ledger).
      const since = monthOf(new Date(key.created_at));
      if (
        month < since &&
        f.hops === 0 &&
        f.exposureMicros === 0n &&
        f.checkout.chargedMicros === 0n &&
        (await monthTotals(ctx.ledger.read, month, key.id)).acts === 0
      ) {
        throw notCheckable(month, `${month} is before this key existed (created ${since}): there is nothing of it to check out`, {
          key_created_month: since,
        });
      }
      const bps = await monthClearBps(ctx.ledger.read, key.id, month);
      // Priced by the declaration's rules from the month's figures (the view above shows the same formula's terms).
      const checkoutLine = bill(CHECKOUT_SKU, {
        floorMicros: f.checkout.floorMicros,
        exposureMicros: f.exposureMicros,
        hops: f.hops,
        chargedMicros: f.checkout.chargedMicros,
      });
      const bpsLine = bill(CLEAR_BPS_SKU, { clearedMicros: bps.cleared_micros });
      const base = {
        keyId: key.id,
        month,
        hops: f.hops,
        exposureMicros: f.exposureMicros,
        ...f.checkout,
        checkoutMicros: BigInt(checkoutLine.amountMicros),
        clearBpsMicros: BigInt(bpsLine.amountMicros),
        clearTier: bps.tier.id,
      };
      return commitAct(event, ctx, caller, {
        run: async (tx, state) => {
          const receipt = state.receipt(
            ctx,
            // The receipt is the month's key's (it states that key's charges); the operator key that checked it out is named.
            {
              kind: 'operator_checkout',
              decision: 'CHECKED_OUT',
              subject: month,
              key_id: key.id,
              data: {
                checked_out_by: caller.id,
                ...checkoutView(month, f.hops, f.exposureMicros, f.checkout),
                clear_bps: clearBpsView(bps, true),
              },
            },
            { signed: true, charges: checkoutCharges({ ...base, receiptId: '', createdAt: '' }) },
          );
          const row: CheckoutRow = { ...base, receiptId: receipt.receipt_id, createdAt: nowIso() };
          // A closed month's figures do not change; the primary key makes the write once (a receipt minted and not written is discarded).
          if (!(await insertCheckout(tx, row))) throw new AlreadyCheckedOut();
          return { writes: { receipt }, reply: reply(closedView(ctx, row, reviews), 201) };
        },
      }).catch(async (e: unknown) => {
        if (e instanceof AlreadyCheckedOut) return reply(closedView(ctx, (await getCheckout(ctx.ledger.read, key.id, month))!, reviews));
        throw e;
      });
    },
  );
}

/** A concurrent checkout of the same month won: this one answers the stored checkout. */
class AlreadyCheckedOut extends Error {
  override name = 'AlreadyCheckedOut';
}

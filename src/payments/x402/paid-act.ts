/**
 * A governed act paid with x402 instead of a key's quota (our extension for
 * hop and lookup, docs/x402.md): the route verifies the payment, the act's
 * pipeline calls `settle` once it has decided (before signing the receipt, so
 * the receipt names the transaction) and `commit` in its own transaction.
 */
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event, HTTPResponse } from 'h3';
import { fingerprint } from '../../crypto/canonical.ts';
import { getApiKey, type ApiKey } from '../../ledger/api-keys.ts';
import type { Receipt, ReceiptInput } from '../../ledger/receipts.ts';
import type { AppContext } from '../../api/context.ts';
import { optionalKey, requireKey } from '../../api/auth.ts';
import { Problem } from '../../api/problem.ts';
import { PaymentRefused, paymentFacts, presentsPayment, type PaidResource, type VerifiedPayment } from './gate.ts';
import { priceMicros, resourceOf, type PaidRoute } from './resources.ts';
import { paidResource } from './service.ts';

export interface SettledAct {
  /** What the receipt and the answer say about the payment. */
  facts: Record<string, unknown>;
  /** PAYMENT-RESPONSE (or X-PAYMENT-RESPONSE). */
  headers: Record<string, string>;
  commit(tx: Transaction, receiptId: string): Promise<void>;
}

export interface PaidAct {
  /** Claims and settles the payment for the act decided as `act`; throws the refusal when it cannot. */
  settle(act: ReceiptInput): Promise<SettledAct>;
}

function paidAct(paid: PaidResource, payment: VerifiedPayment): PaidAct {
  return {
    async settle(act) {
      const s = await paid.settle(payment, fingerprint(act), act);
      return {
        facts: { ...paymentFacts(s, s.transaction), settled: true },
        headers: paid.responseHeaders(s),
        commit: (tx, receiptId) => paid.commit(tx, s, receiptId),
      };
    },
  };
}

/** The receipt input with the payment named in its data. */
export const withPayment = (act: ReceiptInput, s: SettledAct): ReceiptInput => ({ ...act, data: { ...act.data, payment: s.facts } });

/** Signs the receipt of a paid act with its payment and commits both (for acts with no pipeline of their own, e.g. lookup). */
export async function commitPaidAct(ctx: AppContext, paid: PaidAct, act: ReceiptInput): Promise<{ receipt: Receipt; settled: SettledAct }> {
  const settled = await paid.settle(act);
  const receipt = await ctx.ledger.act<Receipt>({
    needs: {},
    run: async (tx, state) => {
      const receipt = state.receipt(ctx, withPayment(act, settled), { signed: true });
      await settled.commit(tx, receipt.receipt_id);
      return { writes: { receipt }, result: receipt };
    },
  });
  return { receipt, settled };
}

export interface HopPayer {
  key: ApiKey | undefined;
  paid: PaidAct | undefined;
}

type Answer = Response | HTTPResponse;

/**
 * Runs a hop-limited route (SPEC 7: 402 when the hop limit is exceeded) with
 * x402 as our extension: a key past its limit, or no key at all, may present a
 * payment and pay for this one call; the hop-limit 402, and the answer to a
 * call with neither key nor payment, then carry the x402 requirements. Without
 * x402 configured, the route behaves exactly as before (a key is required, 401).
 * A key with hops left never pays.
 */
export async function payPerHop(event: H3Event, ctx: AppContext, route: PaidRoute, run: (payer: HopPayer) => Promise<Answer>): Promise<Answer> {
  const paid = paidResource(ctx, resourceOf(ctx.config.BASE_URL, route), priceMicros(route));
  const presented = paid !== undefined && presentsPayment(event);
  const authenticated = paid ? await optionalKey(event, ctx) : await requireKey(event, ctx);
  // Neither key nor payment: the x402 answer (as evaluate gives), so a paying client can proceed.
  if (paid && !authenticated && !presented) return paid.paymentRequired('PAYMENT-SIGNATURE header is required (or an API key)');
  // The authenticated key may come from the auth cache, whose hops_used lags by up to AUTH_CACHE_MS.
  // Whether a presented payment is taken must not lag: read the count afresh (only when one is presented).
  const key = presented && authenticated ? ((await getApiKey(ctx.ledger.read, authenticated.id)) ?? authenticated) : authenticated;
  try {
    if (paid && presented && (!key || key.hops_used >= key.hop_limit)) {
      return await run({ key, paid: paidAct(paid, await paid.verify(event)) });
    }
    return await run({ key, paid: undefined });
  } catch (e) {
    if (e instanceof PaymentRefused) return e.response;
    if (paid && e instanceof Problem && e.code === 'hop_limit_exceeded') {
      return paid.paymentRequired('hop limit exceeded', {
        code: e.code,
        detail: `this key has used its ${String(e.extra.hop_limit)} hops; pay for this call with x402 (PAYMENT-SIGNATURE), or ask an operator to raise the limit`,
        extra: { hop_limit: e.extra.hop_limit, hops_used: e.extra.hops_used, x402_configured: true, how_to_raise: e.extra.how_to_raise },
      });
    }
    throw e;
  }
}

/**
 * The x402 port of the act pipeline (api/act.ts): everything an act needs to
 * take a payment in place of a key, or past a key's hop limit. The pipeline
 * asks `paidDoorOf` once per route whether the route takes x402 here, answers
 * a call without a key (or with a payment past the limit) with `paidAct`, and
 * commits an act whose request carries a paid call with `commitPaidAct`. The
 * payment's rules are in payments/x402 (keyless.ts: verify at the act's price,
 * settle once, commit with the act).
 */
import type { H3Event } from 'h3';
import { HTTPResponse } from 'h3';
import { priceInAtomicUnits } from '../domain/x402.ts';
import type { ActNeeds, ActState } from '../ledger/acts.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import type { Transaction } from '../ledger/sql.ts';
import { PaymentRefused, presentsPayment, type PaidResource } from '../payments/x402/gate.ts';
import {
  afterPaidFailure,
  needsOfPaid,
  paidCallOf,
  paidDecision,
  priceOf,
  settleOnce,
  settles,
  startPaidCall,
  unpaidDecision,
  verifyAtPrice,
  type PaidCall,
  type PaidTerms,
  type QuoteAnswer,
} from '../payments/x402/keyless.ts';
import { fixedMicros, paidRouteOf, pricesToConvert, resourceOf, type PaidRoute } from '../payments/x402/resources.ts';
import { paidResource } from '../payments/x402/service.ts';
import type { ActEvent } from './act-event.ts';
import { actProblem } from './act-problem.ts';
import type { ActSpec, Decision } from './act-spec.ts';
import type { AppContext } from './context.ts';
import type { Problem } from './problem.ts';
import type { Reply } from './reply.ts';
import { actResponse } from './request-notes.ts';
import type { RouteDoc } from './route-doc.ts';
import { StateChanged } from './stale-retry.ts';

export { paidCallOf, presentsPayment };

/** How a route takes x402: its paid resource and price list, and the terms its act settles on. */
export interface PaidDoor {
  paid: PaidResource;
  route: PaidRoute;
  terms: PaidTerms;
  /** A key past its hop limit may pay per call here (RouteDoc.x402.pastHopLimit). */
  pastHopLimit: boolean;
}

/** The route's x402 door, where its declaration takes x402 and the service has x402 configured; else undefined. */
export function paidDoorOf(ctx: AppContext, method: string, path: string, declared: RouteDoc): PaidDoor | undefined {
  const route = paidRouteOf(method, path, declared);
  const paid =
    route && declared.role !== 'operator' ? paidResource(ctx, resourceOf(ctx.config.BASE_URL, route), pricesToConvert(route)) : undefined;
  if (!route || !paid) return undefined;
  const x402 = declared.x402 || undefined;
  return { paid, route, terms: { operation: `${method} ${path}`, settlesOn: x402?.settlesOn }, pastHopLimit: x402?.pastHopLimit === true };
}

const DRY_RUN = new Error('dry run: decided, not committed');

/**
 * An act paid with x402 (payments/x402/keyless.ts): decided once under the
 * lock and rolled back, so that a refusal (an unknown fuse, a rule) costs the
 * payer nothing and the lines it charges are its price; the payment verified
 * at exactly that price (a call without one is answered 402 with it); then,
 * if its answer is one the operation settles for (RouteDoc.x402.settlesOn),
 * settled before it is queued and decided again under the lock, with the
 * payment in place of the key's charge and committed in the same transaction.
 * An answer it does not settle for is committed as decided, unpaid (the
 * payment stays unused).
 */
export async function commitPaidAct(ctx: AppContext, key: ApiKey | undefined, call: PaidCall, spec: ActSpec): Promise<Reply> {
  const needs = needsOfPaid(call, spec.needs ?? {});
  const decide = (tx: Transaction, state: ActState) => (spec.run ? spec.run(tx, state) : spec.decide(state));
  if (!call.settled) {
    let dry: Decision | undefined;
    try {
      await ctx.ledger.act({
        needs,
        run: async (tx, state) => {
          dry = await decide(tx, state);
          throw DRY_RUN;
        },
      });
    } catch (e) {
      if (e !== DRY_RUN) throw actProblem(e, key);
    }
    const settlesHere = settles(call, dry!.reply.status);
    await verifyAtPrice(call, priceOf(call, dry!.writes, settlesHere));
    if (!settlesHere) return commitUnpaid(ctx, key, call, needs, decide);
    await settleOnce(call, dry!.writes);
  }
  try {
    return await ctx.ledger.act({
      needs,
      run: async (tx, state) => {
        const d = await paidDecision(ctx, tx, state, call, await decide(tx, state));
        return { result: d.reply, writes: d.writes };
      },
    });
  } catch (e) {
    throw actProblem(e, key);
  }
}

/** A paid call whose answer its payment does not pay for: committed unpaid; decided again (StateChanged) if the answer changed to one it does. */
async function commitUnpaid(
  ctx: AppContext,
  key: ApiKey | undefined,
  call: PaidCall,
  needs: ActNeeds,
  decide: (tx: Transaction, state: ActState) => Decision | Promise<Decision>,
): Promise<Reply> {
  try {
    return await ctx.ledger.act({
      needs,
      run: async (tx, state) => {
        const d = await decide(tx, state);
        if (settles(call, d.reply.status)) throw new StateChanged();
        const unpaid = unpaidDecision(ctx, call, d);
        return { result: unpaid.reply, writes: unpaid.writes };
      },
    });
  } catch (e) {
    throw actProblem(e, key);
  }
}

/** The hop-limit 402 of a key that may pay per call instead: the x402 requirements of this call, and how else to go on. */
export function hopLimitQuote(e: Problem): QuoteAnswer {
  return {
    error: 'hop limit exceeded',
    why: {
      code: e.code,
      detail: `this key has used its ${String(e.extra.hop_limit)} hops; pay for this call with x402 (PAYMENT-SIGNATURE), or ask an operator to raise the limit`,
      extra: { hop_limit: e.extra.hop_limit, hops_used: e.extra.hops_used, x402_configured: true, how_to_raise: e.extra.how_to_raise },
    },
  };
}

/** How a paid call of an operation is run: its resource and price list, terms, body and handler. */
export interface PaidOperation<B> {
  ctx: AppContext;
  door: PaidDoor;
  body: () => Promise<B>;
  handle: (body: B, key: ApiKey, event: ActEvent) => Promise<Reply>;
}

const PAYMENT_REQUIRED: QuoteAnswer = { error: 'PAYMENT-SIGNATURE header is required (or an API key)' };

/**
 * A paid call of an operation, run as the payer (`key`, a key past its hop
 * limit paying for this call, else the keyless payer). Without a payment: an
 * operation with one price answers 402 with it before the body is read; any
 * other reads the body and decides the act (commitAct) to answer 402 with the
 * price of this request. With one: the body read, and `handle` run; its act
 * verifies and settles the payment at its price (commitPaidAct).
 */
export async function paidAct<B>(
  event: H3Event,
  op: PaidOperation<B>,
  key?: ApiKey,
  quote: QuoteAnswer = PAYMENT_REQUIRED,
): Promise<HTTPResponse | Response> {
  const { ctx, door } = op;
  const { paid, route } = door;
  const presented = presentsPayment(event);
  if (!presented && route.fixed) return paid.paymentRequired(quote.error, priceInAtomicUnits(fixedMicros(route), paid.decimals), quote.why);
  let call: PaidCall | undefined;
  try {
    const b = await op.body();
    call = startPaidCall(event, paid, route, presented ? await paid.read(event) : undefined, door.terms, b, key, quote);
    return actResponse(event, await op.handle(b, call.key, event));
  } catch (e) {
    if (e instanceof PaymentRefused) return e.response;
    throw call ? await afterPaidFailure(ctx, call, e) : e;
  }
}

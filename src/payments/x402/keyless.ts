/**
 * x402 on every metered keyed operation (docs/x402.md, "Every metered
 * operation"): a call without a key pays for this one act instead.
 *
 *   no key, no payment   402 with the requirements of this request's price: before the body is
 *                        read for an operation with one price; for one priced by the request
 *                        (api/act.ts), the body read (400 refuses it) and the act decided as
 *                        a paid one would be, and rolled back: its charge lines are the price
 *   no key, a payment    the body read (400 refuses it, nothing asked); the operation's handler
 *                        runs as the payer (an agent with no account of ours: `payerKey`), and
 *                        when it commits its act (api/act.ts commitAct) the act is decided and
 *                        rolled back, its charge lines priced (`priceOf`), the payment verified
 *                        at exactly that price (gate.ts), claimed and settled, then the act is
 *                        committed with the payment settled in the same transaction: no charge
 *                        to any key, no hop counted, the receipt and the answer naming the
 *                        payment and the lines it paid, PAYMENT-RESPONSE sent.
 *   refused before commit  (bad input, a rule's 4xx): nothing settled, nothing charged.
 *   refused after settling (the state changed under the act, or a rule checked under the
 *                        lock): the money moved, so the payment gets its own receipt
 *                        (kind x402_payment, decision REFUSED) and the problem names it.
 *
 * A paid call is its own idempotency: the payment pays for one act, and a
 * replay is answered x402_payment_used with the receipt it paid for.
 *
 * What a paid answer shows in `charge` (or `charges`) is what its payment
 * took: the lines it was priced at (`asTaken`); nothing when it settled nothing.
 */
import type { H3Event } from 'h3';
import { canonicalJson, fingerprint } from '../../crypto/canonical.ts';
import { compactJwsSync } from '../../crypto/jws.ts';
import type { ActState, ActWrites } from '../../ledger/acts.ts';
import { chargeView, type BilledLine } from '../../domain/charge-rules.ts';
import { priceInAtomicUnits } from '../../domain/x402.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { payerAccountId } from '../../ledger/accounts.ts';
import { RECEIPT_TYP, type Receipt, type ReceiptInput } from '../../ledger/receipts.ts';
import type { Transaction } from '../../ledger/sql.ts';
import { Problem } from '../../domain/problem.ts';
import type { X402Context } from './context.ts';
import {
  PaymentRefused,
  paymentFacts,
  type PaidResource,
  type PresentedPayment,
  type SettledPayment,
  type VerifiedPayment,
} from './gate.ts';
import { fixedMicros, type PaidRoute } from './resources.ts';

declare module 'h3' {
  interface H3EventContext {
    /** The request's x402 call, once started (startPaidCall): what it pays, and how far it got. */
    x402PaidCall?: PaidCall;
  }
}

/** A keyless call paying with x402, kept on the request while its act runs. */
export interface PaidCall {
  paid: PaidResource;
  /** What the operation's declaration says a payment buys (its listed price, its lines). */
  route: PaidRoute;
  /** The payment presented; undefined for a call that only asks its price (answered 402 with it). */
  payment: PresentedPayment | undefined;
  /** How a call without a payment is answered 402 with its price (a key past its hop limit says why). */
  quote: QuoteAnswer;
  /** The payer as the operation's handler sees it. */
  key: ApiKey;
  /** `METHOD path` of the operation. */
  operation: string;
  /** A payment instead of a key (the payer is `payerKey`), rather than a key past its hop limit paying for this call. */
  keyless: boolean;
  /** The answer statuses a payment is settled for (RouteDoc.x402.settlesOn); undefined: every committed act. */
  settlesOn: readonly number[] | undefined;
  requestHash: string;
  /** Set once verified: the payment and the lines it pays (the price of the act as decided for it). */
  verified?: { payment: VerifiedPayment; lines: readonly BilledLine[] };
  /** Set once settled: a re-decided act keeps its one settlement. */
  settled?: SettledPayment;
  /** Set once the act (or the payment's own receipt) committed. */
  committed?: boolean;
}

export const paidCallOf = (event: Pick<H3Event, 'context'>): PaidCall | undefined => event.context.x402PaidCall;

/**
 * The payer as a key-holder: an agent whose key id is its address on the
 * network (`x402:<network>:<address>`) and whose account is that address
 * (payerAccountId): it has no account of ours, so it sees the fuses the public
 * sees (the drill fuses, which it may hop on but not change), and what it
 * makes (an ASTL entity, a trigger, a twin...) is bound to the address that
 * paid, so no other payer can change it.
 */
export function payerKey(p: Pick<PresentedPayment, 'network' | 'payer'>): ApiKey {
  const id = `x402:${p.network}:${p.payer}`;
  const now = new Date().toISOString();
  return {
    id,
    account_id: payerAccountId(p.network, p.payer),
    name: 'x402 payer',
    role: 'agent',
    prefix: '',
    // Each act is paid by its own payment: no hop quota applies (and none is counted).
    hop_limit: Number.MAX_SAFE_INTEGER,
    hops_used: 0,
    hop_period: 'month',
    created_at: now,
    revoked_at: null,
    expires_at: null,
    last_used_at: null,
    rotated_at: null,
    previous_expires_at: null,
  };
}

/** What a paid operation declares about its payments (RouteDoc.x402). */
export interface PaidTerms {
  /** `METHOD path` of the operation. */
  operation: string;
  settlesOn: readonly number[] | undefined;
}

/** The 402 a call without a payment gets: its `error`, and for a key past its hop limit the problem's fields. */
export interface QuoteAnswer {
  error: string;
  why?: { code: string; detail: string; extra?: Record<string, unknown> };
}

/** A payer's key for deciding what a request without a payment would cost (no one pays for it). */
const QUOTE_PAYER = '0x0000000000000000000000000000000000000000';

/**
 * Starts a paid call of the operation; `key`: a key past its hop limit paying for this call (else
 * the payer is `payerKey`); `payment` undefined: the call only asks its price.
 */
export function startPaidCall(
  event: H3Event,
  paid: PaidResource,
  route: PaidRoute,
  payment: PresentedPayment | undefined,
  terms: PaidTerms,
  body: unknown,
  key: ApiKey | undefined,
  quote: QuoteAnswer,
): PaidCall {
  const { operation, settlesOn } = terms;
  const payer = key ?? payerKey(payment ?? { network: paid.network, payer: QUOTE_PAYER });
  const call: PaidCall = {
    paid,
    route,
    payment,
    quote,
    key: payer,
    keyless: key === undefined,
    operation,
    settlesOn,
    requestHash: fingerprint({ operation, body }),
  };
  event.context.x402PaidCall = call;
  return call;
}

/**
 * The price of a paid act: the charge lines it states as decided (what a key
 * would be charged for the same act), or, when it states none or is an answer
 * its payment does not settle (a NO_GO of evaluate), the operation's listed price.
 */
export function priceOf(call: PaidCall, decided: ActWrites, settlesHere: boolean): readonly BilledLine[] {
  const stated = settlesHere ? (decided.receipt?.payload.charges ?? []) : [];
  if (stated.length) return stated.map((c) => ({ sku: c.sku, amountMicros: c.amount_micros, nap: c.nap === true }));
  return [{ sku: call.route.sku, amountMicros: fixedMicros(call.route), nap: false }];
}

/** The lines' sum in atomic units of the asset. */
const atomicAmount = (call: PaidCall, lines: readonly BilledLine[]): string =>
  priceInAtomicUnits(
    lines.reduce((a, l) => a + l.amountMicros, 0),
    call.paid.decimals,
  );

/**
 * The call's payment verified at the price of `lines` (once per price: a
 * re-decided act at the same price keeps it). A call without a payment is
 * answered here: 402 with that price.
 */
export async function verifyAtPrice(call: PaidCall, lines: readonly BilledLine[]): Promise<VerifiedPayment> {
  const amount = atomicAmount(call, lines);
  if (!call.payment) throw new PaymentRefused(call.paid.paymentRequired(call.quote.error, amount, call.quote.why));
  if (call.verified?.payment.amount !== amount) call.verified = { payment: await call.paid.verify(call.payment, amount), lines };
  return call.verified.payment;
}

const factsOf = (s: SettledPayment) => ({ ...paymentFacts(s, s.transaction), settled: true });

/** Whether the act answering `status` is paid for: a payment settles only the answers its operation names. */
export const settles = (call: PaidCall, status: number): boolean => call.settlesOn === undefined || call.settlesOn.includes(status);

/**
 * Claims and settles the payment once, before the act is queued (a settlement
 * is never awaited under the lock). `decided` is the act as decided for it:
 * kept with the claim, so that a crash before the commit is finished
 * (reconcile.ts) with the act's own receipt when that receipt is all it
 * writes, else with a receipt of the payment alone.
 */
export async function settleOnce(call: PaidCall, decided?: ActWrites): Promise<SettledPayment> {
  call.settled ??= await call.paid.settle(call.verified!.payment, call.requestHash, pendingReceipt(call, decided));
  return call.settled;
}

function pendingReceipt(call: PaidCall, decided: ActWrites | undefined): ReceiptInput {
  const r = decided?.receipt;
  if (!r || decided.records?.length) return paymentReceiptInput(call, 'PAID');
  const { receipt_id: _id, iss: _iss, iat: _iat, issued_at: _at, charges: _paidInstead, ...input } = r.payload;
  return input;
}

/** The receipt a payment gets when it has no act of its own (refused after settling, or reconciled after a crash). */
function paymentReceiptInput(call: PaidCall, decision: 'PAID' | 'REFUSED', refusal?: Record<string, unknown>): ReceiptInput {
  return {
    kind: 'x402_payment',
    decision,
    subject: call.operation,
    fingerprint: call.requestHash,
    data: {
      operation: call.operation,
      ...(call.settled ? { payment: factsOf(call.settled) } : { payment_id: call.verified?.payment.paymentId ?? call.payment?.paymentId }),
      ...(refusal ? { refused: refusal } : {}),
    },
  };
}

/**
 * The receipt of a paid call's act charging no key (a payment pays instead, or
 * nothing is paid), with `facts` about its payment in its data when given; the
 * same id and index, and a self-contained receipt is signed again over the new
 * payload. The answer names the new signature where it named the old one.
 */
function uncharged(
  ctx: X402Context,
  d: PaidDecision<{ body: unknown }>,
  facts?: Record<string, unknown>,
): { receipt: Receipt | undefined; body: unknown } {
  const r = d.writes.receipt;
  if (!r) return { receipt: r, body: d.reply.body };
  const { charges: _paidInstead, ...rest } = r.payload;
  const payload = facts ? { ...rest, data: { ...r.payload.data, payment: facts } } : rest;
  const jws = r.jws === null ? null : compactJwsSync(canonicalJson(payload), ctx.keyring.current, RECEIPT_TYP);
  return { receipt: { ...r, payload, jws }, body: r.jws && jws ? replaced(d.reply.body, r.jws, jws) : d.reply.body };
}

/** Replaces every occurrence of one string value in a JSON answer (the receipt JWS, when it was signed again). */
function replaced(value: unknown, from: string, to: string): unknown {
  if (value === from) return to;
  if (Array.isArray(value)) return value.map((v) => replaced(v, from, to));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaced(v, from, to)]));
  return value;
}

/** An act's decision: what it writes, and its answer (src/api/reply.ts Reply) of which a payment sets the body and headers. */
interface PaidDecision<R extends { body: unknown; headers?: Record<string, string> }> {
  writes: ActWrites;
  reply: R;
}

/**
 * The act's decision as a paid one: no charge to the payer's key (the payment
 * replaces it), the receipt and the answer naming the payment, and the
 * payment settled in the act's transaction.
 */
export async function paidDecision<R extends { body: unknown; headers?: Record<string, string> }>(
  ctx: X402Context,
  tx: Transaction,
  state: ActState,
  call: PaidCall,
  d: PaidDecision<R>,
): Promise<PaidDecision<R>> {
  const s = call.settled!;
  const facts = factsOf(s);
  const restated = uncharged(ctx, d, facts);
  const receipt = restated.receipt ?? state.receipt(ctx, paymentReceiptInput(call, 'PAID'));
  const body = restated.body;
  // Set on the answer object itself, not a copy: an answer completed at the group's end (an ASTL
  // publish's inclusion proof, log-answers.ts provedAtGroupEnd) is filled in after this returns.
  if (body && typeof body === 'object' && !Array.isArray(body))
    Object.assign(body, takenFields(body, call.verified!.lines), { payment: facts });
  await call.paid.commit(tx, s, receipt.receipt_id);
  call.committed = true;
  return {
    ...d,
    writes: { ...d.writes, receipt },
    reply: { ...d.reply, body, headers: { ...d.reply.headers, ...call.paid.responseHeaders(s) } },
  };
}

/**
 * A paid call's act committed without its payment (an answer its operation does
 * not settle for): its lines charge no key, and the answer shows nothing taken.
 */
export function unpaidDecision<R extends { body: unknown; headers?: Record<string, string> }>(
  ctx: X402Context,
  call: PaidCall,
  d: PaidDecision<R>,
): PaidDecision<R> {
  const restated = uncharged(ctx, d);
  const receipt = restated.receipt;
  let body = asTaken(restated.body, []);
  if (body && typeof body === 'object' && !('payment' in body)) {
    const facts = paymentFacts(call.verified?.payment ?? call.payment!);
    body = {
      ...body,
      payment: {
        ...facts,
        settled: false,
        detail: `not settled: this operation is paid only for its answers ${call.settlesOn?.join(', ')}; this one cost nothing`,
      },
    };
  }
  return { writes: { ...d.writes, ...(receipt ? { receipt } : {}) }, reply: { ...d.reply, body } };
}

/**
 * The answer of a paid call showing what its payment took: `charges` (when the
 * answer lists its lines) or `charge` are the lines it paid, whatever the act
 * decided at its commit (a fuse blown between the price and the commit keeps
 * the price paid); an answer without either gets `charge`.
 */
export function asTaken(body: unknown, lines: readonly BilledLine[]): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  return { ...body, ...takenFields(body, lines) };
}

function takenFields(body: object, lines: readonly BilledLine[]): Record<string, unknown> {
  const views = lines.map(chargeView);
  if ('charges' in body) return { charges: views };
  return { charge: views.length === 1 ? views[0] : null, ...(views.length > 1 ? { charges: views } : {}) };
}

/** Whether `state` was read for the payer: its hop quota is not the payer's to spend. */
export const needsOfPaid = <N extends { hopOf?: string | undefined }>(call: PaidCall, needs: N): N =>
  needs.hopOf === call.key.id ? { ...needs, hopOf: undefined } : needs;

/**
 * After a paid act failed: if its payment had settled and nothing was
 * committed, the payment gets its own receipt (REFUSED, with the problem) and
 * the problem names the payment. Any other error is returned unchanged.
 */
export async function afterPaidFailure(ctx: X402Context, call: PaidCall, e: unknown): Promise<unknown> {
  if (!call.settled || call.committed) return e;
  const refusal = e instanceof Problem ? { status: e.status, code: e.code } : { status: 500, code: 'internal_error' };
  const s = call.settled;
  const receipt = await ctx.ledger.act<Receipt>({
    needs: {},
    run: async (tx: Transaction, state: ActState) => {
      const receipt = state.receipt(ctx, paymentReceiptInput(call, 'REFUSED', refusal));
      await call.paid.commit(tx, s, receipt.receipt_id);
      return { writes: { receipt }, result: receipt };
    },
  });
  call.committed = true;
  const payment = {
    ...factsOf(s),
    receipt_id: receipt.receipt_id,
    verify_url: receipt.verify_url,
    detail: 'the payment settled before the act was refused: its receipt records both',
  };
  if (e instanceof Problem) {
    return new Problem({
      status: e.status,
      code: e.code,
      title: e.title,
      ...(e.detail !== undefined ? { detail: e.detail } : {}),
      headers: { ...e.headers, ...call.paid.responseHeaders(s) },
      extra: { ...e.extra, payment },
    });
  }
  return e;
}

/**
 * x402 on every metered keyed operation (docs/x402.md, "Every metered
 * operation"): a call without a key pays for this one act instead.
 *
 *   no key, no payment   402 with the operation's requirements, before its body is read
 *   no key, a payment    the body read (400 refuses it, nothing asked), the payment's terms
 *                        checked and verified (gate.ts); the operation's handler runs as the
 *                        payer (an agent with no account of ours: `payerKey`), and when it
 *                        commits its act (api/act.ts commitAct) the payment is claimed and
 *                        settled first, then the act is committed with the payment settled
 *                        in the same transaction: no charge to any key, no hop counted, the
 *                        receipt and the answer naming the payment, PAYMENT-RESPONSE sent.
 *   refused before commit  (bad input, a rule's 4xx): nothing settled, nothing charged.
 *   refused after settling (the state changed under the act, or a rule checked under the
 *                        lock): the money moved, so the payment gets its own receipt
 *                        (kind x402_payment, decision REFUSED) and the problem names it.
 *
 * A paid call is its own idempotency: the payment pays for one act, and a
 * replay is answered x402_payment_used with the receipt it paid for.
 */
import type { H3Event } from 'h3';
import { canonicalJson, fingerprint } from '../../crypto/canonical.ts';
import { compactJwsSync } from '../../crypto/jws.ts';
import type { ActState, ActWrites } from '../../ledger/acts.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { DRILL_OWNER } from '../../ledger/fuses.ts';
import { RECEIPT_TYP, type Receipt, type ReceiptInput } from '../../ledger/receipts.ts';
import type { Transaction } from '../../ledger/sql.ts';
import { Problem } from '../../domain/problem.ts';
import type { X402Context } from './context.ts';
import { paymentFacts, type PaidResource, type SettledPayment, type VerifiedPayment } from './gate.ts';

/** A keyless call paying with x402, kept on the request while its act runs. */
export interface PaidCall {
  paid: PaidResource;
  payment: VerifiedPayment;
  /** The payer as the operation's handler sees it. */
  key: ApiKey;
  /** `METHOD path` of the operation. */
  operation: string;
  /** A payment instead of a key (the payer is `payerKey`), rather than a key past its hop limit paying for this call. */
  keyless: boolean;
  /** The answer statuses a payment is settled for (RouteDoc.x402.settlesOn); undefined: every committed act. */
  settlesOn: readonly number[] | undefined;
  requestHash: string;
  /** Set once settled: a re-decided act keeps its one settlement. */
  settled?: SettledPayment;
  /** Set once the act (or the payment's own receipt) committed. */
  committed?: boolean;
}

const CONTEXT = 'x402PaidCall';

export const paidCallOf = (event: H3Event): PaidCall | undefined => event.context[CONTEXT] as PaidCall | undefined;

/**
 * The payer as a key-holder: an agent whose key id is its address on the
 * network (`x402:<network>:<address>`) and whose account is the public's
 * (DRILL_OWNER): it has no account of ours, so it sees what the public sees
 * (the drill fuses) and what it makes is the public's, never an account's.
 */
export function payerKey(p: VerifiedPayment): ApiKey {
  const id = `x402:${p.network}:${p.payer}`;
  const now = new Date().toISOString();
  return {
    id,
    account_id: DRILL_OWNER,
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

/** Starts a paid call of the operation; `key`: a key past its hop limit paying for this call (else the payer is `payerKey`). */
export function startPaidCall(event: H3Event, paid: PaidResource, payment: VerifiedPayment, terms: PaidTerms, body: unknown, key?: ApiKey): PaidCall {
  const { operation, settlesOn } = terms;
  const call: PaidCall = { paid, payment, key: key ?? payerKey(payment), keyless: key === undefined, operation, settlesOn, requestHash: fingerprint({ operation, body }) };
  event.context[CONTEXT] = call;
  return call;
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
  call.settled ??= await call.paid.settle(call.payment, call.requestHash, pendingReceipt(call, decided));
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
    data: { operation: call.operation, ...(call.settled ? { payment: factsOf(call.settled) } : { payment_id: call.payment.paymentId }), ...(refusal ? { refused: refusal } : {}) },
  };
}

/**
 * The receipt of a paid act, naming its payment and charging the payer's key
 * nothing (the payment replaces the toll); the same id and index, and a
 * self-contained receipt is signed again over the new payload.
 */
function withPayment(ctx: X402Context, r: Receipt, facts: Record<string, unknown>): Receipt {
  const { charges: _paidInstead, ...rest } = r.payload;
  const payload = { ...rest, data: { ...r.payload.data, payment: facts } };
  return { ...r, payload, jws: r.jws === null ? null : compactJwsSync(canonicalJson(payload), ctx.keyring.current, RECEIPT_TYP) };
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
export async function paidDecision<R extends { body: unknown; headers?: Record<string, string> }>(ctx: X402Context, tx: Transaction, state: ActState, call: PaidCall, d: PaidDecision<R>): Promise<PaidDecision<R>> {
  const s = call.settled!;
  const facts = factsOf(s);
  const before = d.writes.receipt;
  const receipt = before ? withPayment(ctx, before, facts) : state.receipt(ctx, paymentReceiptInput(call, 'PAID'));
  let body = d.reply.body;
  if (before?.jws && receipt.jws) body = replaced(body, before.jws, receipt.jws);
  if (body && typeof body === 'object' && !Array.isArray(body)) body = { ...body, payment: facts };
  await call.paid.commit(tx, s, receipt.receipt_id);
  call.committed = true;
  return {
    ...d,
    writes: { ...d.writes, receipt },
    reply: { ...d.reply, body, headers: { ...d.reply.headers, ...call.paid.responseHeaders(s) } },
  };
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
  const payment = { ...factsOf(s), receipt_id: receipt.receipt_id, verify_url: receipt.verify_url, detail: 'the payment settled before the act was refused: its receipt records both' };
  if (e instanceof Problem) {
    return new Problem({ status: e.status, code: e.code, title: e.title, ...(e.detail !== undefined ? { detail: e.detail } : {}), headers: { ...e.headers, ...call.paid.responseHeaders(s) }, extra: { ...e.extra, payment } });
  }
  return e;
}

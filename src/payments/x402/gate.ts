/**
 * Taking an x402 payment for one act, the small adapter a route calls.
 *
 * Order (docs/x402.md, "Order, and what a crash does"):
 *   1. read   the PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1) header (`read`: whatever is wrong with
 *             it is kept, and answered once the price is known)
 *   2. decide the act under the lock and roll it back: its charge lines are its price (api/act.ts)
 *   3. verify the payment against that price and our terms, then with the facilitator (`verify`;
 *             nothing is written; a refusal is a 402, an outage a 503)
 *   4. claim  the payment in the ledger (state settling; unique payment id: a replay stops here)
 *   5. settle with the facilitator (refused: state failed, 402, no act; unknown: stays settling, 503)
 *   6. commit the act, its receipt (which names the payment and its transaction) and the
 *      payment's state settled, in ONE transaction
 * A crash between 4 and 6 leaves the row settling; reconcile.ts finishes it (a background job).
 */
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import { PaymentPayloadV1Schema, PaymentPayloadV2Schema } from '@x402/core/schemas';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { getAddress, isAddress } from 'viem';
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event } from 'h3';
import {
  paymentRequiredV1,
  paymentRequiredV2,
  requirementsV1,
  requirementsV2,
  v1NetworkName,
  type X402Resource,
} from '../../domain/x402.ts';
import { claimPayment, finishPayment, getPayment, type PaymentRow } from '../../ledger/x402-payments.ts';
import type { ReceiptInput } from '../../ledger/receipts.ts';
import { Problem } from '../../domain/problem.ts';
import type { X402Context } from './context.ts';
import type { Facilitator } from './facilitator.ts';
import type { X402Setup } from './settings.ts';
import { authorizationIdentity, checkPaymentTerms } from './terms.ts';

/**
 * A payment as presented, read but not verified: who it says pays and how
 * much it says it moves (what the act is decided for), and what is wrong
 * with it, if anything, answered once the price is known (`verify`).
 */
export interface PresentedPayment {
  version: 1 | 2;
  payload: PaymentPayload;
  paymentId: string;
  /** The authorization's `from` (the zero address when it names none). */
  payer: string;
  /** The authorization's `value`, atomic units ('0' when it states none). */
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  /** Why it is refused whatever the price (malformed, already used). */
  refusal?: { code: string; detail: string; extra?: Record<string, unknown> };
}

/** A payment the gate and the facilitator verified for a resource at its price, not yet claimed. */
export interface VerifiedPayment extends PresentedPayment {
  requirements: PaymentRequirements;
}

/** A payment settled for an act; `commit` must run in the act's transaction. */
export interface SettledPayment extends VerifiedPayment {
  settlement: SettleResponse;
  transaction: string;
}

/** What a receipt says about the payment that paid for it. */
export function paymentFacts(p: PresentedPayment, transaction?: string) {
  return {
    protocol: 'x402',
    scheme: 'exact',
    payment_id: p.paymentId,
    payer: p.payer,
    amount: p.amount,
    asset: p.asset,
    network: p.network,
    pay_to: p.payTo,
    ...(transaction ? { transaction } : {}),
  };
}

export const PAYMENT_HEADERS = ['payment-signature', 'x-payment'] as const;

/** Whether the request carries a payment header at all. */
export const presentsPayment = (event: H3Event): boolean => PAYMENT_HEADERS.some((h) => event.req.headers.get(h) !== null);

/**
 * The identity of a payment: the authorizer's nonce on this token and network
 * (checked canonical by the terms, so one byte string is one payment).
 */
const paymentIdOf = (network: string, asset: string, auth: { from: string; nonce: string }): string =>
  `eip3009:${network}:${asset.toLowerCase()}:${auth.from.toLowerCase()}:${auth.nonce.toLowerCase()}`;

const same = (a: unknown, b: unknown) => typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** One paid resource: its URL and description; each call is priced by what it asks for (atomic units of the asset). */
export class PaidResource {
  private readonly ctx: X402Context;
  private readonly setup: X402Setup;
  private readonly facilitator: Facilitator;
  readonly resource: X402Resource;

  constructor(ctx: X402Context, setup: X402Setup, facilitator: Facilitator, resource: X402Resource) {
    this.ctx = ctx;
    this.setup = setup;
    this.facilitator = facilitator;
    this.resource = resource;
  }

  get network(): string {
    return this.setup.settings.network;
  }

  /** Decimals of the asset: a price in micro-USD is `priceInAtomicUnits(micros, decimals)`. */
  get decimals(): number {
    return this.setup.settings.decimals;
  }

  /** The x402 402 answer for `amount`: v2 PAYMENT-REQUIRED header, v1 body; `code`/`detail` name why a presented payment failed. */
  paymentRequired(error: string, amount: string, why?: { code: string; detail: string; extra?: Record<string, unknown> }): Response {
    const s = this.setup.settings;
    const headers = new Headers({
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      'payment-required': encodePaymentRequiredHeader(paymentRequiredV2(s, this.resource, amount, error)),
      'access-control-expose-headers': 'PAYMENT-REQUIRED',
    });
    const body = {
      ...paymentRequiredV1(s, this.resource, amount, error),
      ...(why ? { code: why.code, detail: why.detail, ...why.extra } : {}),
    };
    return new Response(JSON.stringify(body), { status: 402, headers });
  }

  /** The v2 payment requirements at `amount`, as the manifests publish them. */
  requirementsDocument(amount: string) {
    return paymentRequiredV2(this.setup.settings, this.resource, amount, '');
  }

  private refuse(amount: string, code: string, detail: string, extra?: Record<string, unknown>): PaymentRefused {
    return new PaymentRefused(this.paymentRequired(code, amount, { code, detail, ...(extra ? { extra } : {}) }));
  }

  /**
   * Step 1: the presented payment, read. Nothing is refused here: a header
   * that is not a payment, or a payment already used, is answered by `verify`
   * with the requirements of the act's price.
   */
  async read(event: H3Event): Promise<PresentedPayment> {
    const s = this.setup.settings;
    const raw = event.req.headers.get('payment-signature') ?? event.req.headers.get('x-payment');
    const base = {
      version: 2 as const,
      payload: {} as PaymentPayload,
      paymentId: '',
      payer: ZERO_ADDRESS,
      amount: '0',
      network: s.network,
      asset: s.asset,
      payTo: s.payTo,
    };
    if (raw === null)
      return { ...base, refusal: { code: 'x402_payment_required', detail: 'send a PAYMENT-SIGNATURE header (x402 v2) or X-PAYMENT (v1)' } };
    let decoded: unknown;
    try {
      decoded = decodePaymentSignatureHeader(raw.trim());
    } catch {
      return { ...base, refusal: { code: 'x402_payment_malformed', detail: 'the payment header is not base64-encoded JSON' } };
    }
    const v2 = PaymentPayloadV2Schema.safeParse(decoded);
    const v1 = v2.success ? undefined : PaymentPayloadV1Schema.safeParse(decoded);
    if (!v2.success && !v1?.success)
      return { ...base, refusal: { code: 'x402_payment_malformed', detail: 'the payment header is not an x402 v1 or v2 payment payload' } };
    const payload = (v2.success ? v2.data : v1!.data) as unknown as PaymentPayload;
    const version = v2.success ? 2 : 1;
    const auth = (payload.payload as Record<string, unknown>).authorization as Record<string, unknown> | undefined;
    const from = typeof auth?.from === 'string' && isAddress(auth.from, { strict: false }) ? getAddress(auth.from) : ZERO_ADDRESS;
    const value = typeof auth?.value === 'string' ? auth.value : '0';
    const identity = authorizationIdentity(payload);
    const presented: PresentedPayment = {
      ...base,
      version,
      payload,
      payer: from,
      amount: value,
      paymentId: identity ? paymentIdOf(s.network, s.asset, identity) : '',
    };
    // A known payment is refused first, with what it paid for, and before the facilitator is asked: it may well still call it valid.
    const known = identity && (await getPayment(this.ctx.ledger.read, presented.paymentId));
    return known ? { ...presented, refusal: this.usedRefusal(known) } : presented;
  }

  /**
   * Step 3: the presented payment checked against what this act costs
   * (`amount`, atomic units) and our terms (terms.ts: exactly the price, the
   * recipient, validity, resource, nonce, signature), then verified by the facilitator.
   */
  async verify(p: PresentedPayment, amount: string): Promise<VerifiedPayment> {
    if (p.refusal) throw this.refuse(amount, p.refusal.code, p.refusal.detail, p.refusal.extra);
    const s = this.setup.settings;
    const { payload } = p;
    let requirements: PaymentRequirements;
    let wrong: string[];
    if (p.version === 2) {
      requirements = requirementsV2(s, amount);
      const a = payload.accepted;
      wrong = (['scheme', 'network', 'amount', 'asset', 'payTo'] as const).filter((f) => !same(a[f], requirements[f]));
    } else {
      requirements = requirementsV1(s, this.resource, amount) as unknown as PaymentRequirements;
      const v1 = payload as unknown as { scheme: string; network: string };
      wrong = [...(v1.scheme === 'exact' ? [] : ['scheme']), ...(v1.network === v1NetworkName(s.network) ? [] : ['network'])];
    }
    if (wrong.length)
      throw this.refuse(
        amount,
        'x402_payment_mismatch',
        `the payment does not match what this request costs and where it is paid: ${wrong.join(', ')}`,
        { fields: wrong },
      );
    // The terms are ours to check: a facilitator only says whether the signature can settle.
    const terms = await checkPaymentTerms(
      payload,
      {
        price: amount,
        payTo: s.payTo,
        asset: s.asset,
        network: s.network,
        assetName: s.assetName,
        assetVersion: s.assetVersion,
        resource: this.resource.url,
      },
      Math.floor(Date.now() / 1000),
    );
    if (!terms.ok) throw this.refuse(amount, terms.code, terms.detail, { fields: terms.fields });
    const paymentId = paymentIdOf(s.network, s.asset, terms.authorization);

    const verdict = await this.facilitator.verify(payload, requirements);
    if (verdict.kind === 'unavailable') throw facilitatorUnavailable(verdict.detail, this.ctx);
    if (verdict.kind === 'invalid') {
      throw this.refuse(
        amount,
        'x402_payment_invalid',
        `the facilitator refused the payment: ${verdict.reason}${verdict.message ? ` (${verdict.message})` : ''}`,
        {
          reason: verdict.reason,
        },
      );
    }
    // The payer and the amount are what the verified signature says, whatever the facilitator answered.
    const { from: payer, value } = terms.authorization;
    return {
      version: p.version,
      paymentId,
      payload,
      requirements,
      payer,
      amount: value,
      network: s.network,
      asset: s.asset,
      payTo: s.payTo,
    };
  }

  private usedRefusal(row: PaymentRow): NonNullable<PresentedPayment['refusal']> {
    const detail =
      row.state === 'settled'
        ? 'this payment has already paid for an act; sign a new authorization'
        : row.state === 'failed'
          ? 'this payment failed to settle; sign a new authorization'
          : 'this payment is being settled for another request';
    return {
      code: 'x402_payment_used',
      detail,
      extra: {
        payment_state: row.state,
        ...(row.receipt_id ? { receipt_id: row.receipt_id, verify_url: `${this.ctx.config.BASE_URL}/v1/receipts/${row.receipt_id}` } : {}),
      },
    };
  }

  /**
   * Steps 4-5: claims the payment for this act, then settles it. `act` is the
   * receipt the act will get (without the transaction); it is kept with the
   * claim so that a crash before the commit can still be finished.
   */
  async settle(p: VerifiedPayment, requestHash: string, act: ReceiptInput): Promise<SettledPayment> {
    const claimed = await this.ctx.ledger.write((tx) =>
      claimPayment(tx, {
        payment_id: p.paymentId,
        resource: this.resource.url,
        request_hash: requestHash,
        network: p.network,
        asset: p.asset,
        amount: p.amount,
        payer: p.payer,
        pay_to: p.payTo,
        x402_version: p.version,
        payment_payload: JSON.stringify(p.payload),
        requirements: JSON.stringify(p.requirements),
        pending_receipt: JSON.stringify(act),
      }),
    );
    if (!claimed) {
      const used = this.usedRefusal((await getPayment(this.ctx.ledger.read, p.paymentId))!);
      throw this.refuse(p.amount, used.code, used.detail, used.extra);
    }
    const outcome = await this.facilitator.settle(p.payload, p.requirements);
    if (outcome.kind === 'settled') {
      return { ...p, settlement: outcome.response, transaction: outcome.response.transaction };
    }
    if (outcome.kind === 'refused') {
      await this.ctx.ledger.write((tx) => finishPayment(tx, p.paymentId, { state: 'failed', error: outcome.reason }));
      throw this.refuse(
        p.amount,
        'x402_settlement_failed',
        `the payment could not be settled: ${outcome.reason}; nothing was done and nothing charged`,
        {
          reason: outcome.reason,
        },
      );
    }
    // Unknown: the money may have moved. The row stays `settling`; start-up reconciliation finishes it.
    this.ctx.log('error', 'x402 settlement outcome unknown', { payment_id: p.paymentId, error: outcome.detail });
    throw new Problem({
      status: 503,
      code: 'x402_settlement_pending',
      title: 'Settlement pending',
      detail:
        'the facilitator did not confirm the settlement in time; no answer was given for this payment. It is reconciled later: ' +
        'present the same payment again to learn its receipt, or sign a new one if it failed',
      headers: { 'retry-after': String(Math.max(1, this.ctx.config.X402_RECONCILE_AFTER_SECONDS)) },
      extra: { payment_id: p.paymentId },
    });
  }

  /** Step 6, inside the act's transaction: the payment is settled and names the act's receipt. */
  async commit(tx: Transaction, p: SettledPayment, receiptId: string): Promise<void> {
    const ok = await finishPayment(tx, p.paymentId, { state: 'settled', transaction: p.transaction, receiptId });
    if (!ok) throw new Error(`x402 payment ${p.paymentId} was not settling at commit`);
  }

  /** The PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1) header of a settled payment. */
  responseHeaders(p: SettledPayment): Record<string, string> {
    const name = p.version === 2 ? 'PAYMENT-RESPONSE' : 'X-PAYMENT-RESPONSE';
    return { [name.toLowerCase()]: encodePaymentResponseHeader(p.settlement), 'access-control-expose-headers': name };
  }
}

/** A presented payment refused: the 402 answer to send as is. */
export class PaymentRefused extends Error {
  override name = 'PaymentRefused';
  readonly response: Response;
  constructor(response: Response) {
    super('x402 payment refused');
    this.response = response;
  }
}

function facilitatorUnavailable(detail: string, ctx: X402Context): Problem {
  ctx.log('info', 'x402 facilitator unavailable', { error: detail });
  return new Problem({
    status: 503,
    code: 'x402_facilitator_unavailable',
    title: 'Payment facilitator unavailable',
    detail: 'the x402 facilitator could not verify the payment (unreachable or too slow); nothing was done and nothing charged: retry',
    headers: { 'retry-after': '5' },
  });
}

/**
 * A small typed client for the gate service (exported as `fusegate/client`).
 * Requests are typed by the same zod schemas the routes parse with; a problem
 * answer (4xx/5xx application/problem+json) throws FuseGateError. Decisions
 * (DENY, NO_GO, HOLD...) are answers, returned, never thrown. Given a
 * `payer`, a call the service answers 402 is paid with x402 and sent again once.
 *
 * @example
 *   const gate = new FuseGateClient({ baseUrl: 'http://localhost:4321', apiKey: process.env.FUSEGATE_KEY });
 *   const hop = await gate.hop({ fuse_id, action: { kind: 'pay' } });
 *   if (!hop.verdict) throw new Error(`refused: ${hop.reason}`);
 */
import type { z } from 'zod';
import type { hopResponse } from './api/gate/governed.ts';
import type { actRequest, actResponse, classifyRequest, hopRequest, lookupResponse } from './api/gate/hop.ts';
import type { createFuseRequest, fuseResponse } from './api/gate/fuses.ts';
import { verifyTransparentStatement } from './crypto/cose.ts';
import { verifyExclusionProof, type ExclusionProofJson } from './crypto/exclusion.ts';
import { OPERATIONS, type OperationInput, type OperationName } from './client-operations.ts';
import { decodeHeader, paymentHeader, type PaymentRequired, type PaymentResponse, type X402Signer } from './client-x402.ts';

export { OPERATIONS, type OperationInput, type OperationName };
export type { PaymentRequired, PaymentRequirements, PaymentResponse, X402Signer } from './client-x402.ts';

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  errors?: Array<{ field: string; message: string }>;
  [extra: string]: unknown;
}

export class FuseGateError extends Error {
  override name = 'FuseGateError';
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem) {
    super(`${problem.status} ${problem.code}: ${problem.detail ?? problem.title}`);
    this.status = problem.status;
    this.problem = problem;
  }
}

/**
 * What the client reads of an answer. The global `fetch`'s Response has it all;
 * a transport of one's own may give just this (the proxy's, src/proxy/gate-fetch.ts).
 */
export interface FetchAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  json(): Promise<unknown>;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** How the client sends a request: the global `fetch`, or any function that answers as it does. */
export type Fetch = (url: string, init: RequestInit) => Promise<FetchAnswer>;

export interface ClientOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  fetch?: Fetch | undefined;
  /**
   * Pays with x402 when the service asks (402 with PAYMENT-REQUIRED): a viem
   * account, or any signer of EIP-712 typed data. The call is sent again once
   * with the signed EIP-3009 authorization; without a payer a 402 throws.
   */
  payer?: X402Signer | undefined;
}

export interface CallOptions {
  /** Sent as Idempotency-Key: a retry is answered once and charged once. */
  idempotencyKey?: string;
}

export type HopRequest = z.input<typeof hopRequest>;
export type HopAnswer = z.output<typeof hopResponse>;
export type ActRequest = z.input<typeof actRequest>;
export type ActAnswer = z.output<typeof actResponse>;
export type LookupAnswer = z.output<typeof lookupResponse>;
export type ClassifyRequest = z.input<typeof classifyRequest>;
export type Fuse = z.output<typeof fuseResponse>;
export type CreateFuseRequest = z.input<typeof createFuseRequest>;

/** Answers whose shape the client does not pin (they are documented in /openapi.json). */
export type Json = Record<string, unknown>;
/** A review a HOLD opened (docs/reviews.md). */
export type Review = Json & {
  id: string;
  state: 'pending' | 'approved' | 'denied' | 'expired';
  decided_by: { kind: 'key' | 'person'; id: string } | null;
  review_url: string;
};

/**
 * An answer: its JSON (or `{ text }` for an answer that is not JSON), its HTTP
 * status (decisions share a body across statuses), and the settlement when
 * x402 paid for it.
 */
export type Answer<T> = T & { status: number; paymentResponse?: PaymentResponse };

/** A 402 the client did not (or could not) pay, as a problem: its code (x402_payment_required, or why a payment was refused) and the requirements. */
function paymentProblem(data: Json, required: string | null): Problem {
  return {
    ...data,
    type: 'about:blank',
    title: 'Payment Required',
    status: 402,
    code: typeof data.code === 'string' ? data.code : 'x402_payment_required',
    detail:
      typeof data.detail === 'string'
        ? data.detail
        : typeof data.error === 'string'
          ? data.error
          : 'this call needs an x402 payment (or an API key)',
    ...(required ? { payment_required: decodeHeader<PaymentRequired>(required) } : {}),
  };
}

export class FuseGateClient {
  readonly #base: string;
  readonly #key: string | undefined;
  readonly #fetch: Fetch;
  readonly #payer: X402Signer | undefined;

  constructor(opts: ClientOptions) {
    this.#base = opts.baseUrl.replace(/\/+$/, '');
    this.#key = opts.apiKey;
    this.#fetch = opts.fetch ?? fetch;
    this.#payer = opts.payer;
  }

  async #call<T>(method: string, path: string, body?: unknown, opts: CallOptions = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#key) headers.authorization = `Bearer ${this.#key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
    const send = (h: Record<string, string>) =>
      this.#fetch(this.#base + path, { method, headers: h, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    let res = await send(headers);
    const required = res.status === 402 && this.#payer ? res.headers.get('payment-required') : null;
    const payment = required !== null ? await paymentHeader(decodeHeader<PaymentRequired>(required), this.#payer!) : undefined;
    if (payment) {
      // Paid once: a second 402 (the payment refused) is thrown, never paid again.
      await res.arrayBuffer();
      res = await send({ ...headers, 'payment-signature': payment });
    }
    const type = res.headers.get('content-type') ?? '';
    // A document that is not JSON (a signed checkpoint note, a text document) is returned as its text.
    if (!/[/+]json\b/.test(type)) {
      const text = await res.text();
      if (!res.ok)
        throw new FuseGateError({
          type: 'about:blank',
          title: res.statusText || 'Error',
          status: res.status,
          code: `http_${res.status}`,
          detail: text.slice(0, 500),
        });
      return { text, status: res.status } as unknown as Answer<T>;
    }
    const data = (await res.json()) as Json;
    if (type.startsWith('application/problem+json')) throw new FuseGateError(data as unknown as Problem);
    if (res.status === 402) throw new FuseGateError(paymentProblem(data, res.headers.get('payment-required')));
    const settled = res.headers.get('payment-response') ?? res.headers.get('x-payment-response');
    return { ...(data as T), status: res.status, ...(settled ? { paymentResponse: decodeHeader<PaymentResponse>(settled) } : {}) };
  }

  /**
   * Calls any operation of the service by its name (the one name it has
   * everywhere: its MCP tool, OpenAPI operationId and gate.json entry), with
   * the input its declaration types: the path's parameters, and the JSON body
   * or the query. Every operation is here (src/client-operations.ts is
   * written from the declarations).
   */
  call<N extends OperationName>(name: N, input: OperationInput[N], opts?: CallOptions): Promise<Answer<Json>> {
    return this.#operation<Json>(name, input as Record<string, unknown>, opts);
  }

  /** An operation by name: its path and method from the declarations' table, never written here. */
  #operation<T>(name: OperationName, input: Record<string, unknown>, opts?: CallOptions): Promise<Answer<T>> {
    const op = OPERATIONS[name];
    const rest: Record<string, unknown> = { ...input };
    const path = op.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_, p: string) => {
      const v = rest[p];
      delete rest[p];
      if (v === undefined) throw new TypeError(`${name} needs ${p}`);
      return encodeURIComponent(String(v));
    });
    if (op.input === 'query') {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(rest)) if (v !== undefined) q.set(k, String(v));
      const qs = q.toString();
      return this.#call<T>(op.method, qs ? `${path}?${qs}` : path, undefined, opts);
    }
    return this.#call<T>(op.method, path, op.input === 'body' ? rest : undefined, opts);
  }

  hop(req: HopRequest, opts?: CallOptions) {
    return this.#operation<HopAnswer>('fuse_hop', { ...req }, opts);
  }
  lookup(fuseId: string) {
    return this.#operation<LookupAnswer>('fuse_lookup', { fuse_id: fuseId });
  }
  act(req: ActRequest, opts?: CallOptions) {
    return this.#operation<ActAnswer>('act', { ...req }, opts);
  }
  classify(req: ClassifyRequest, opts?: CallOptions) {
    return this.#operation<Json>('classify', { ...req }, opts);
  }
  createFuse(req: CreateFuseRequest = {}, opts?: CallOptions) {
    return this.#operation<Fuse>('fuse_create', { ...req }, opts);
  }
  blowFuse(fuseId: string, opts?: CallOptions) {
    return this.#operation<Fuse>('fuse_blow', { fuse_id: fuseId }, opts);
  }
  chargeFuse(fuseId: string, opts?: CallOptions) {
    return this.#operation<Fuse>('fuse_charge', { fuse_id: fuseId }, opts);
  }
  /** Pre-finality evaluate: GO (200), NO_GO (403) and HOLD (409) are all returned; see `status`. */
  evaluate(req: Json, opts?: CallOptions) {
    return this.#operation<Json>('prefinality_evaluate', req, opts);
  }
  verifyPrefinality(receipt: string) {
    return this.#operation<Json>('prefinality_verify', { receipt });
  }
  /** Verifies a receipt JWS, or a receipt's whole evidence (what `receipt(id)` returns). */
  verifyReceipt(receipt: string | Json) {
    return this.#operation<{ valid: boolean } & Json>('receipt_verify', { receipt });
  }
  /** The evidence behind a receipt's verify_url. */
  receipt(receiptId: string) {
    return this.#operation<{ receipt: string | null; leaf: string } & Json>('receipt_get', { receipt_id: receiptId });
  }
  me() {
    return this.#operation<Json>('me', {});
  }
  /**
   * Waits for a person to answer the review a HOLD opened (its `review_id`),
   * long-polling `GET /v1/reviews/{id}?wait=` (at most 30 s a request) until
   * it is no longer pending or `timeoutSeconds` have passed; returns the
   * review as last read (`state`: pending, approved, denied or expired). Once
   * approved, send the held request again with `review_id` (docs/reviews.md).
   */
  async waitForReview(reviewId: string, opts: { timeoutSeconds?: number; pollSeconds?: number } = {}): Promise<Answer<Review>> {
    const deadline = Date.now() + (opts.timeoutSeconds ?? 24 * 3600) * 1000;
    // Each long poll lasts at most pollSeconds (30, the server's bound): shorter for a client whose requests time out sooner.
    const poll = Math.min(30, opts.pollSeconds ?? 30);
    for (;;) {
      const wait = Math.max(0, Math.min(poll, Math.ceil((deadline - Date.now()) / 1000)));
      const r = await this.#operation<Review>('review_get', { review_id: reviewId, wait });
      if (r.state !== 'pending' || wait === 0 || Date.now() >= deadline) return r;
    }
  }
  /**
   * The exclusion proof of a job (PAS, our extension): that this key has no
   * redeemed spend leaf for it, or that it has one. Check it offline with
   * `verifyExclusion` (docs/exclusion-proofs.md); never trust its `present`.
   */
  exclusionProof(jobId: string) {
    return this.#operation<ExclusionAnswer>('pas_exclusion', { job_id: jobId });
  }
}

export type ExclusionAnswer = ExclusionProofJson & { verifier_key: string; public_key_url: string };

/**
 * Checks an exclusion proof against the service's Ed25519 public key (raw 32
 * bytes, from /crypto/public-key) or a note verifier key; throws when it does
 * not hold, else says whether the job has a redeemed spend leaf.
 */
export function verifyExclusion(jobId: string, answer: ExclusionProofJson, trust: Uint8Array | string, expectedOrigin?: string) {
  return verifyExclusionProof(jobId, answer, trust, expectedOrigin);
}

/**
 * Checks a receipt fetched as SCITT COSE (its verify_url with `Accept:
 * application/cose`) against the service's Ed25519 public key (raw 32 bytes,
 * from /crypto/public-key): the statement's signature, and its COSE receipt's
 * RFC 9162 inclusion proof and signature over the root. Resolves to the log
 * entry, its index and the tree size; rejects when anything does not hold.
 */
export function verifyCoseReceipt(statement: Uint8Array, publicKey: Uint8Array) {
  return verifyTransparentStatement(statement, publicKey);
}

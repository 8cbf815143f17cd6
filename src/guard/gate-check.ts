/**
 * The one question asked of the gate before an agent's tool runs, and its
 * answer reduced to what the caller does with the call: run it, refuse it, or
 * hold it. Shared by the MCP proxy (`fusegate proxy`) and the tool guards
 * (`fusegate/guard` and its adapters), so that both decide alike.
 *
 * Fails closed: only a PERMIT (a hop's `verdict: true`) or a GO (an evaluate
 * answered 200) runs the call. A gate that cannot be reached, answers 5xx, or
 * refuses the request itself (4xx: unknown fuse, bad key, hop limit) refuses it.
 */
import { FuseGateError, type FuseGateClient, type Json } from '../client.ts';
import type { Mandate, Rail, Transfer } from '../domain/prefinality.ts';
import { isToolName } from '../domain/tool-name.ts';

export type { Mandate, Rail, Transfer };

/** A hop on `fuse` (with the act kind, when known), or, for a tool that pays, the pre-finality evaluate. */
export type GateQuestion =
  | { fuse: string; tool?: string | undefined; kind?: string | undefined; rail?: undefined }
  | { fuse: string; tool?: string | undefined; rail: Rail; transfer: Transfer; mandate?: Mandate | undefined };

export interface GateVerdict {
  /** `run`: the call may go ahead; `refuse`: it must not; `hold`: it must not until a review clears it. */
  action: 'run' | 'refuse' | 'hold';
  /** The gate's decision (PERMIT, GO, DENY, BLOCK, SILENCE, NO_GO, HOLD); null when the gate gave none (unreachable, a problem). */
  decision: string | null;
  reason: string;
  receipt_id?: string;
  verify_url?: string;
  /**
   * HOLD: what the gate's answer says about the review: the rule that held the
   * call, its detail and fields, and the review it opened (`review_id`,
   * `review_url`, `review_expires_at`; docs/reviews.md).
   */
  hold?: Json;
  /** HOLD: the review a person of the account answers; once approved, the same call sent with it goes through once. */
  review_id?: string;
  review_url?: string;
}

export interface AskOptions {
  /**
   * How long a held payment call waits for a person to answer its review (default 0: the HOLD is
   * answered at once). Approved within it, the call is evaluated again with the review and runs;
   * denied, it is refused; still pending, it is held as before.
   */
  holdWaitSeconds?: number | undefined;
}

/** Each long poll of a held call's review: under the guards' default gate timeout (10 s), which would cut a longer one. */
const REVIEW_POLL_SECONDS = 5;

/** Asks the gate about one tool call; never throws, never lets a call run that the gate did not clear. */
export async function askGate(gate: FuseGateClient, q: GateQuestion, o: AskOptions = {}): Promise<GateVerdict> {
  // A name outside the MCP tool-name form would make the gate refuse the whole request: leave it out.
  const tool = q.tool !== undefined && isToolName(q.tool) ? q.tool : undefined;
  try {
    if (q.rail !== undefined) {
      const context = { fuse_id: q.fuse, ...(tool ? { tool } : {}) };
      return await evaluateWithReview(
        gate,
        { rail: q.rail, transfer: q.transfer, ...(q.mandate ? { mandate: q.mandate } : {}), context },
        o.holdWaitSeconds ?? 0,
      );
    }
    return hopVerdict(await gate.hop({ fuse_id: q.fuse, ...(q.kind ? { action: { kind: q.kind } } : {}), ...(tool ? { tool } : {}) }));
  } catch (e) {
    return unanswered(e);
  }
}

/** The review each held call of a gate client opened, by the call's evaluate request: asked again, the call names it. */
const HELD_CALLS_MAX = 1000;
const heldCalls = new WeakMap<FuseGateClient, Map<string, { id: string; url: string | undefined }>>();

/**
 * The evaluate of a payment call, naming the review its last HOLD opened (docs/reviews.md): so the
 * same call, made again once a person approved it, runs (once); while nobody has answered it is
 * still held; denied, it is refused; expired, used or gone, it is asked afresh (a new review).
 */
async function evaluateWithReview(gate: FuseGateClient, request: Json, holdWaitSeconds: number): Promise<GateVerdict> {
  let held = heldCalls.get(gate);
  if (!held) heldCalls.set(gate, (held = new Map()));
  const key = JSON.stringify(request);
  const review = held.get(key);
  if (review) {
    try {
      const v = evaluateVerdict(await gate.evaluate({ ...request, review_id: review.id }));
      if (v.action !== 'hold') held.delete(key);
      return v;
    } catch (e) {
      const code = e instanceof FuseGateError ? e.problem.code : undefined;
      const named = { review_id: review.id, ...(review.url ? { review_url: review.url } : {}) };
      if (code === 'review_pending')
        return {
          action: 'hold',
          decision: 'HOLD',
          reason: `still waiting for a person to answer review ${review.id}`,
          hold: named,
          ...named,
        };
      if (code === 'review_denied') {
        held.delete(key);
        return { action: 'refuse', decision: 'DENY', reason: `a person of the account denied this call in review ${review.id}`, ...named };
      }
      if (!code?.startsWith('review_') && code !== 'unknown_review') throw e;
      held.delete(key);
    }
  }
  const v = evaluateVerdict(await gate.evaluate(request));
  if (v.action === 'hold' && v.review_id && holdWaitSeconds > 0) {
    const answered = await gate
      .waitForReview(v.review_id, { timeoutSeconds: holdWaitSeconds, pollSeconds: REVIEW_POLL_SECONDS })
      .catch(() => undefined);
    const named = { review_id: v.review_id, ...(v.review_url ? { review_url: v.review_url } : {}) };
    if (answered?.state === 'approved') return evaluateVerdict(await gate.evaluate({ ...request, review_id: v.review_id }));
    if (answered?.state === 'denied')
      return { action: 'refuse', decision: 'DENY', reason: `a person of the account denied this call in review ${v.review_id}`, ...named };
  }
  if (v.action === 'hold' && v.review_id) {
    // Bounded: past it, the oldest held call is forgotten (made again, the gate answers it with the same review while pending).
    if (held.size >= HELD_CALLS_MAX) held.delete(held.keys().next().value!);
    held.set(key, { id: v.review_id, url: v.review_url });
  }
  return v;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function receiptOf(answer: Json): Pick<GateVerdict, 'receipt_id' | 'verify_url'> {
  const receipt_id = text(answer.receipt_id);
  const verify_url = text(answer.verify_url);
  return { ...(receipt_id ? { receipt_id } : {}), ...(verify_url ? { verify_url } : {}) };
}

function hopVerdict(answer: Json): GateVerdict {
  const decision = text(answer.decision) ?? (answer.verdict === true ? 'PERMIT' : 'DENY');
  const reason = text(answer.reason) ?? `the gate answered ${decision}`;
  const action = answer.verdict === true ? 'run' : decision === 'HOLD' ? 'hold' : 'refuse';
  return { action, decision, reason, ...receiptOf(answer), ...(action === 'hold' ? heldOf(answer) : {}) };
}

/** GO is 200, NO_GO 403 and HOLD 409, each with the decision body (docs/prefinality.md). */
function evaluateVerdict(answer: Json & { status: number }): GateVerdict {
  const decision = text(answer.decision) ?? `HTTP ${answer.status}`;
  const rule = answer.rule as { id?: unknown; description?: unknown } | undefined;
  const reason = text(answer.detail) ?? text(rule?.description) ?? `the gate answered ${decision}`;
  const action = answer.status === 200 && decision === 'GO' ? 'run' : decision === 'HOLD' ? 'hold' : 'refuse';
  return { action, decision, reason, ...receiptOf(answer), ...(action === 'hold' ? heldOf(answer) : {}) };
}

/** A HOLD's part of the verdict: what held it, and the review it opened. */
function heldOf(answer: Json): Pick<GateVerdict, 'hold' | 'review_id' | 'review_url'> {
  const keep = ['rule', 'detail', 'fields', 'review_id', 'review_url', 'review_expires_at'] as const;
  const hold = Object.fromEntries(keep.filter((k) => answer[k] !== undefined).map((k) => [k, answer[k]]));
  const review_id = text(answer.review_id);
  const review_url = text(answer.review_url);
  return { hold, ...(review_id ? { review_id } : {}), ...(review_url ? { review_url } : {}) };
}

function unanswered(e: unknown): GateVerdict {
  if (e instanceof FuseGateError) {
    const why =
      e.status >= 500 ? `the gate failed (${e.status} ${e.problem.code})` : `the gate refused the request (${e.status} ${e.problem.code})`;
    return { action: 'refuse', decision: null, reason: `${why}: ${e.problem.detail ?? e.problem.title}` };
  }
  const err = e as Error & { cause?: { message?: string } };
  const detail = [err?.message, err?.cause?.message].filter(Boolean).join(': ') || String(e);
  return { action: 'refuse', decision: null, reason: `the gate could not be reached: ${detail}` };
}

/** What the agent (and the model behind it) reads when a call is not run. */
export function refusalText(v: GateVerdict): string {
  const receipt = v.receipt_id ? ` Receipt ${v.receipt_id}${v.verify_url ? `: ${v.verify_url}` : ''}.` : '';
  if (v.action === 'hold') {
    const review = v.review_id
      ? ` A person of the account is asked to review it: review ${v.review_id}${v.review_url ? ` (${v.review_url}; GET it with ?wait=30 to wait for the answer)` : ''}. Once a person approves it, the same call made again goes through, once.`
      : '';
    return `Fuse Gate put this call on HOLD for review; it was not run: ${v.reason}.${receipt}${review}`;
  }
  const decision = v.decision ?? 'fail closed';
  return `Fuse Gate refused this call (${decision}); it was not run: ${v.reason}.${receipt}`;
}

/** The verdict as metadata beside a result or a refusal (the proxy's `_meta["fusegate/gate"]`). */
export function verdictMeta(v: GateVerdict): Json {
  return {
    decision: v.decision,
    reason: v.reason,
    ...(v.receipt_id ? { receipt_id: v.receipt_id } : {}),
    ...(v.verify_url ? { verify_url: v.verify_url } : {}),
    ...(v.hold ? { hold: v.hold } : {}),
    ...(v.review_id ? { review_id: v.review_id } : {}),
    ...(v.review_url ? { review_url: v.review_url } : {}),
  };
}

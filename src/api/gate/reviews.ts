/**
 * Reviews (issue 47, docs/reviews.md): a HOLD is a question for a person.
 *   GET  /v1/reviews?state=pending              any key     the account's reviews, newest first
 *   GET  /v1/reviews/{review_id}?wait=N         any key     one review; with `wait`, answered at once when decided (long poll, at most 30 s)
 *   POST /v1/reviews/{review_id}/approve|deny   operator    {note?}; never the requesting key (403 four_eyes)
 *
 * A HOLD of pre-finality evaluate, the execute gate or PAS-A pre-bind opens a
 * review (one per held request: a retry answers with the same) and names it in
 * its answer; the same request sent again with `review_id` once it is approved
 * gets its GO or PERMIT (a pre-bind: its ALLOW, once the rules allow it), once. Every step is a receipt in the log, linked to the HOLD's:
 * review_opened (HOLD), review_approved (PERMIT), review_denied (DENY),
 * review_expired (SILENCE); the reviewer and the note are commitments opened
 * to the account.
 */
import type { ActEvent } from '../act-event.ts';
import type { H3Event } from 'h3';
import { z } from 'zod';
import {
  type AnswerRefusal,
  answerRefusal,
  askedOf,
  type HeldAmount,
  approvalRefusal,
  approvalsRequired,
  REVIEW_NOTE_MAX,
  reviewStateAt,
  reviewStillOpen,
  type UseRefusal,
} from '../../domain/review.ts';
import { newId, nowIso } from '../../ids.ts';
import type { ActNeeds, ActState, RowNeed } from '../../ledger/acts.ts';
import { ownerId, ownerParts } from '../../ledger/accounts.ts';
import { membersOf } from '../../ledger/members.ts';
import { allows } from '../../domain/team-roles.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import type { ActRecord } from '../../ledger/records.ts';
import type { Receipt } from '../../ledger/receipts.ts';
import {
  decideReview,
  dueReviews,
  recordFirstApproval,
  getReview,
  insertReview,
  LATEST_REVIEWS,
  listReviews,
  requestKeyOf,
  REVIEWS,
  setOpenedReceipt,
  unopenedReviews,
  useReview,
  type FirstApproval,
  type MonthReviews,
  type Review,
  type Reviewer,
} from '../../ledger/reviews.ts';
import type { Transaction } from '../../ledger/sql.ts';
import { commitAct, type Decision } from '../act.ts';
import type { AppContext } from '../context.ts';
import { intervalJob } from '../jobs.ts';
import { mailTransport } from '../../accounts/mail.ts';
import { notFound, Problem } from '../problem.ts';
import { reply, type Reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { retryIfStale, StateChanged } from '../stale-retry.ts';
import { committed } from '../site/metered.ts';
import { reviewAlert } from './alert-events.ts';
import { operation } from '../operation.ts';

export const REVIEWS_PATH = '/v1/reviews';
/** Longest long poll (seconds). */
export const MAX_WAIT_SECONDS = 30;
/** How often a long poll reads the review again, for a decision taken by another process (ms). */
const REREAD_MS = 1000;
/** How often the expiry job runs (ms). */
const SWEEP_MS = 30_000;

const reviewIdSchema = z.string().regex(/^rev_[A-Za-z0-9_-]{1,64}$/, 'a review id such as rev_…');
/** The `review_id` an agent sends with the request a review approved. */
export const reviewIdField = reviewIdSchema
  .optional()
  .describe('the approved review of this very request (from its HOLD answer): the request is then cleared, once');

export const answerRequest = z.strictObject({
  note: z
    .string()
    .max(REVIEW_NOTE_MAX, `a note of at most ${REVIEW_NOTE_MAX} characters`)
    .optional()
    .describe('why; committed in the public receipt, opened to the account'),
});
const listQuery = z.object({
  state: z.enum(['pending', 'approved', 'denied', 'expired']).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
const waitQuery = z.object({
  wait: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS, `at most ${MAX_WAIT_SECONDS} seconds`).optional(),
});

export const reviewObject = z.looseObject({
  object: z.literal('review'),
  id: z.string(),
  state: z.enum(['pending', 'approved', 'denied', 'expired']),
  operation: z.string(),
  requested_by: z.object({ key_id: z.string() }),
  summary: z.record(z.string(), z.unknown()),
  hold_receipt_id: z.string(),
  opened_receipt_id: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.object({ kind: z.enum(['key', 'person']), id: z.string() }).nullable(),
  note: z.string().nullable(),
  decision_receipt_id: z.string().nullable(),
  used_at: z.string().nullable(),
  used_receipt_id: z.string().nullable(),
  approvals_required: z.number().int().min(1).max(2),
  approvals: z.array(
    z.object({
      decided_by: z.object({ kind: z.enum(['key', 'person']), id: z.string() }),
      decided_at: z.string(),
      note: z.string().nullable(),
      receipt_id: z.string(),
    }),
  ),
  review_url: z.string(),
});
const listResponse = z.object({ object: z.literal('list'), pending_count: z.number(), data: z.array(reviewObject) });

export const reviewUrl = (ctx: AppContext, id: string): string => `${ctx.config.BASE_URL}${REVIEWS_PATH}/${id}`;

export function reviewView(ctx: AppContext, r: Review, now = new Date()) {
  return {
    object: 'review' as const,
    id: r.id,
    state: reviewStateAt(r, now),
    operation: r.operation,
    requested_by: { key_id: r.key_id },
    summary: r.summary,
    hold_receipt_id: r.hold_receipt_id,
    opened_receipt_id: r.opened_receipt_id,
    created_at: r.created_at,
    expires_at: r.expires_at,
    decided_at: r.decided_at,
    decided_by: r.decided_by,
    note: r.note,
    decision_receipt_id: r.decision_receipt_id,
    used_at: r.used_at,
    used_receipt_id: r.used_receipt_id,
    approvals_required: r.approvals_required,
    approvals: approvalsOf(r),
    review_url: reviewUrl(ctx, r.id),
  };
}

/** The approvals given so far, oldest first: the first of two while it waits, then the deciding one. */
function approvalsOf(r: Review) {
  const list = r.first_approval
    ? [
        {
          decided_by: r.first_approval.reviewer,
          decided_at: r.first_approval.at,
          note: r.first_approval.note,
          receipt_id: r.first_approval.receipt_id,
        },
      ]
    : [];
  if (r.state === 'approved' && r.decided_by && r.decided_at && r.decision_receipt_id)
    list.push({ decided_by: r.decided_by, decided_at: r.decided_at, note: r.note, receipt_id: r.decision_receipt_id });
  return list;
}

// ---- a HOLD opens a review; an approval clears the request -------------------------------------

/** A request a HOLD may hold for review: whose, which operation, and its fingerprint (what an approval is bound to). */
export interface HeldRequest {
  key: ApiKey;
  operation: string;
  fingerprint: string;
  /** How long a review it opens waits (a mandate's `review_expires_in_seconds`); else the key's, else REVIEW_TTL_SECONDS. */
  ttlSeconds?: number | undefined;
  /** The amount at stake, for REVIEW_TWO_APPROVERS_ABOVE_USD: a decimal in USD, or an amount in another currency. */
  amount?: HeldAmount | undefined;
}

/**
 * A held request whose fingerprint is taken only when read: most requests are
 * never held, and hashing the request again would cost each of them.
 */
export function heldRequest(fields: Omit<HeldRequest, 'fingerprint'>, fingerprintOf: () => string): HeldRequest {
  let fingerprint: string | undefined;
  return {
    ...fields,
    get fingerprint() {
      return (fingerprint ??= fingerprintOf());
    },
  };
}

/** Thrown by a decision that answers HOLD before reading its review: the act is decided again, reading it (`reviewNeeds`). */
export class HoldNeedsReview extends Error {
  override name = 'HoldNeedsReview';
}

/** The rows a reviewed decision reads under the lock: the review named, or the latest of the held request. */
function reviewNeeds(held: HeldRequest, reviewId: string | undefined): RowNeed[] {
  return reviewId
    ? [{ reader: REVIEWS, key: reviewId }]
    : [{ reader: LATEST_REVIEWS, key: requestKeyOf(held.key.id, held.operation, held.fingerprint) }];
}

/**
 * What a reviewed decision read under the lock: the approval it may use (named
 * by `review_id`, checked), or the review a HOLD answers with (the open one of
 * the same request, else a new one, written only if the act does hold).
 */
export type ReviewStep = { approval: Review; hold?: undefined } | { hold: { review: Review; opens: boolean }; approval?: undefined };

async function readReviewStep(
  ctx: AppContext,
  state: ActState,
  held: HeldRequest,
  reviewId: string | undefined,
  now: Date,
): Promise<ReviewStep> {
  if (reviewId) {
    const r = await state.row(REVIEWS, reviewId);
    if (!r || r.account_id !== ownerId(held.key)) throw notFound(`no review ${reviewId} in this account`, 'unknown_review');
    const refusal = approvalRefusal(r, { keyId: held.key.id, operation: held.operation, fingerprint: held.fingerprint }, now);
    if (refusal) throw useProblem(refusal, r, now);
    return { approval: r };
  }
  const requestKey = requestKeyOf(held.key.id, held.operation, held.fingerprint);
  const latest = await state.row(LATEST_REVIEWS, requestKey);
  if (latest && reviewStillOpen(latest, now)) return { hold: { review: latest, opens: false } };
  const created = nowIso(now);
  const review: Review = {
    id: newId('rev'),
    account_id: ownerId(held.key),
    key_id: held.key.id,
    operation: held.operation,
    fingerprint: held.fingerprint,
    request_key: requestKey,
    hold_receipt_id: '',
    summary: {},
    state: 'pending',
    created_at: created,
    expires_at: new Date(
      now.getTime() + (held.ttlSeconds ?? held.key.review_ttl_seconds ?? ctx.config.REVIEW_TTL_SECONDS) * 1000,
    ).toISOString(),
    opened_receipt_id: null,
    decided_at: null,
    decided_by: null,
    reviewer_commitment: null,
    note: null,
    decision_receipt_id: null,
    used_at: null,
    used_receipt_id: null,
    approvals_required: approvalsRequired(held.amount, ctx.config.REVIEW_TWO_APPROVERS_ABOVE_USD),
    first_approval: null,
  };
  return { hold: { review, opens: true } };
}

/** Under the lock, once the act has minted its receipt: the review opened by this HOLD written, or the approval used by this GO. */
async function completeReviewStep(
  tx: Transaction,
  step: ReviewStep | undefined,
  decision: { held: boolean; cleared: boolean },
  receipt: Receipt,
  summary: Record<string, unknown>,
): Promise<void> {
  if (step?.hold && decision.held && step.hold.opens)
    await insertReview(tx, { ...step.hold.review, hold_receipt_id: receipt.receipt_id, summary });
  // Used by its first clearance only: of two presentations racing, the second is decided again and refused as used.
  if (step?.approval && decision.cleared && !(await useReview(tx, step.approval.id, receipt.payload.issued_at, receipt.receipt_id)))
    throw new StateChanged();
}

/** A decision of an act that may hold: its writes and reply, what a reviewer is shown (made only for a review it opens), and whether it held or cleared. */
export type ReviewableDecision = Decision & { summary: () => Record<string, unknown>; held: boolean; cleared: boolean };

/**
 * How an act that may hold decides: pure on the group's state (`decide`, the
 * execute gate and evaluate, on the hot path), or reading its area's own rows
 * in the transaction (`run`, PAS-A pre-bind).
 */
export type ReviewableSpec =
  | { decide: (state: ActState, step: ReviewStep | undefined) => ReviewableDecision; run?: undefined }
  | { run: (tx: Transaction, state: ActState, step: ReviewStep | undefined) => Promise<ReviewableDecision>; decide?: undefined };

/**
 * Commits an act that may answer HOLD (evaluate, the execute gate, PAS-A
 * pre-bind). Decided first without any review (a `decide` purely on the
 * group's state: a GO or PERMIT reads nothing more, the hot path unchanged); a HOLD of `held` (throwing HoldNeedsReview), or a
 * request naming its review, is decided again as a `run` act that reads the
 * review under the lock: the HOLD answers with the open review of the same
 * request or opens one, an approval clears the request once. Decided again
 * too on StateChanged (an approval used by a request racing this one, a paid
 * call's answer turned into one it pays for). After a HOLD that opened a
 * review, its review_opened receipt (afterHoldOpened).
 */
export async function commitHeldAct(
  event: ActEvent,
  ctx: AppContext,
  key: ApiKey | undefined,
  held: HeldRequest | undefined,
  reviewId: string | undefined,
  needs: ActNeeds,
  spec: ReviewableSpec,
): Promise<Reply> {
  let reviewed = reviewId !== undefined;
  let opened: string | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await commitAct(
        event,
        ctx,
        key,
        reviewed && held
          ? {
              needs: { ...needs, rows: [...(needs.rows ?? []), ...reviewNeeds(held, reviewId)] },
              run: async (tx, state) => {
                const step = await readReviewStep(ctx, state, held, reviewId, new Date());
                const d = spec.run ? await spec.run(tx, state, step) : spec.decide(state, step);
                await completeReviewStep(tx, step, d, d.writes.receipt!, d.summary());
                opened = d.held && step.hold?.opens ? step.hold.review.id : undefined;
                return d;
              },
            }
          : spec.run
            ? { needs, run: (tx, state) => spec.run(tx, state, undefined) }
            : { needs, decide: (state) => spec.decide(state, undefined) },
      );
      if (opened) await afterHoldOpened(ctx, opened);
      return answer;
    } catch (e) {
      if (e instanceof HoldNeedsReview && !reviewed && held) {
        reviewed = true;
        continue;
      }
      if (retryIfStale(e, attempt)) continue;
      throw e;
    }
  }
}

/** What a HOLD answer says of its review. */
export function holdFields(ctx: AppContext, r: Review): Record<string, string> {
  return { review_id: r.id, review_url: reviewUrl(ctx, r.id), review_expires_at: r.expires_at };
}

/** What the public receipt of a cleared request says of its approval: the chain HOLD -> approval -> this act. */
export function approvalLink(r: Review): Record<string, string | null> {
  return {
    review_id: r.id,
    hold_receipt_id: r.hold_receipt_id,
    approval_receipt_id: r.decision_receipt_id,
    approver: r.reviewer_commitment,
  };
}

/** What the caller's answer says of the approval it used (its own account's: the approver in clear). */
export function approvalFields(r: Review): Record<string, unknown> {
  return { review: { ...approvalLink(r), approved_by: r.decided_by } };
}

/**
 * After a HOLD that opened a review committed: its `review_opened` receipt,
 * and the people told. Never fails the HOLD already answered: what is missed
 * here the expiry job writes later.
 */
export async function afterHoldOpened(ctx: AppContext, reviewId: string): Promise<void> {
  let opened: Review | undefined;
  try {
    opened = await recordOpened(ctx, reviewId);
  } catch (e) {
    if (!(e instanceof StateChanged))
      ctx.log('error', 'review_opened receipt not written (the expiry job retries)', { review_id: reviewId, error: String(e) });
  }
  if (opened && ctx.config.MAIL_URL) void mailOpened(ctx, opened);
}

/**
 * Tells the account's people who may answer it (its owners and operators: domain/team-roles.ts) by
 * mail (only with MAIL_URL set: a review is not worth a log line per HOLD otherwise). Never awaited by the HOLD.
 */
async function mailOpened(ctx: AppContext, r: Review): Promise<void> {
  try {
    // A test review (account `test:<id>`) is the live account's people's to answer too.
    const reviewers = (await membersOf(ctx.ledger.read, ownerParts(r.account_id).accountId)).filter((m) => allows(m.role, 'operator'));
    const s = r.summary;
    const what = askedOf(s);
    const send = mailTransport(ctx.config, ctx.log);
    for (const person of reviewers) {
      await send({
        to: person.email,
        subject: `Review needed: ${what}`,
        text: `A request of key ${r.key_id} was held for review (${r.operation}, rule ${String(s.rule ?? '?')}): ${what}.\n\nApprove or deny it before ${r.expires_at}:\n${ctx.config.BASE_URL}/dashboard/reviews#${r.id}\n\nIf nobody answers, it expires and the request may not go on.\n`,
      });
    }
  } catch (e) {
    ctx.log('error', 'review mail not sent', { review_id: r.id, error: String(e) });
  }
}

/** Writes the review's review_opened receipt if it has none yet; the review when this call wrote it. */
async function recordOpened(ctx: AppContext, id: string): Promise<Review | undefined> {
  return ctx.ledger.act({
    // A test key's review is its account's test side's: its receipts go to the test log.
    needs: {
      rows: [{ reader: REVIEWS, key: id }],
      test: ownerParts((await getReview(ctx.ledger.read, id))?.account_id ?? '').mode === 'test',
    },
    run: async (tx, state) => {
      const r = await state.row(REVIEWS, id);
      if (!r || r.opened_receipt_id) return { writes: {}, result: undefined as Review | undefined };
      const receipt = state.receipt(ctx, {
        kind: 'review_opened',
        decision: 'HOLD',
        subject: r.id,
        key_id: r.key_id,
        data: { review_id: r.id, hold_receipt_id: r.hold_receipt_id, operation: r.operation, expires_at: r.expires_at },
      });
      if (!(await setOpenedReceipt(tx, id, receipt.receipt_id))) throw new StateChanged();
      const alert = reviewAlert(r.account_id, 'review.opened', fuseOf(r), {
        ...reviewEvent(ctx, r),
        receipt_id: receipt.receipt_id,
        verify_url: receipt.verify_url,
      });
      return { writes: { receipt, records: [alert] }, result: { ...r, opened_receipt_id: receipt.receipt_id } as Review | undefined };
    },
  });
}

const fuseOf = (r: Review): string | null => (typeof r.summary.fuse_id === 'string' ? r.summary.fuse_id : null);

function reviewEvent(ctx: AppContext, r: Review): Record<string, unknown> {
  return {
    review_id: r.id,
    review_url: reviewUrl(ctx, r.id),
    operation: r.operation,
    key_id: r.key_id,
    hold_receipt_id: r.hold_receipt_id,
    expires_at: r.expires_at,
    summary: r.summary,
  };
}

/**
 * What a review costs and how long it waits, as GET /v1/me shows it (docs/pricing.md): nothing of
 * its own; the HOLD that opened it is the NAP `hold`, the GO or PERMIT it clears its own toll.
 */
export function reviewTerms(ctx: AppContext, pending: number) {
  return {
    pending_count: pending,
    review_usd: '0.00',
    charged: REVIEW_CHARGED,
    expires_after_seconds: ctx.config.REVIEW_TTL_SECONDS,
    queue_url: `${ctx.config.BASE_URL}${REVIEWS_PATH}?state=pending`,
  };
}

const REVIEW_CHARGED =
  'nothing of its own: the HOLD that opens a review is charged the NAP hold, the GO or PERMIT an approval clears its own toll';

/** A key's reviews of a month, as its operator statement shows them: counted, and costing nothing of their own. */
export function reviewStatementView(m: MonthReviews) {
  return { ...m, review_usd: '0.00', charged: REVIEW_CHARGED };
}

// ---- people answer -------------------------------------------------------------------------------

const DECISION_WORD = { approved: 'PERMIT', denied: 'DENY', expired: 'SILENCE' } as const;

/**
 * Decides review `id` of account `accountId` (approved or denied) by `reviewer`
 * (the operator key `key`, or a person signed in, acting with the dashboard's key): a conditional update
 * under the write lock, so of an approval and a denial racing exactly one wins
 * and the other is refused (409) as decided. Its receipt commits the reviewer
 * and the note; the account reads their openings.
 */
export async function answerReview(
  event: ActEvent,
  ctx: AppContext,
  key: ApiKey,
  id: string,
  to: 'approved' | 'denied',
  reviewer: Reviewer,
  note: string | undefined,
): Promise<Reply> {
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await commitAct(event, ctx, key, {
        needs: { rows: [{ reader: REVIEWS, key: id }] },
        run: async (tx, state) => {
          const now = new Date();
          const r = await state.row(REVIEWS, id);
          if (!r || r.account_id !== ownerId(key)) throw notFound(`no review ${id} in this account`, 'unknown_review');
          const refusal = answerRefusal(r, { keyId: key.id, reviewer, to }, now);
          if (refusal) throw answerProblem(refusal, r, now);
          // The first of two approvals records itself and leaves the review pending for the second.
          const firstOfTwo = to === 'approved' && r.approvals_required === 2 && !r.first_approval;
          const c = committed(
            {
              kind: firstOfTwo ? 'review_first_approval' : `review_${to}`,
              decision: DECISION_WORD[to],
              subject: r.id,
              data: {
                review_id: r.id,
                hold_receipt_id: r.hold_receipt_id,
                opened_receipt_id: r.opened_receipt_id,
                operation: r.operation,
                ...twoApproversFacts(r, firstOfTwo),
                reviewer,
                ...(note !== undefined ? { note } : {}),
              },
            },
            ['data.reviewer', 'data.note'],
          );
          const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { openings: c.openings });
          const commitment = c.openings.find((o) => o.field === 'data.reviewer')!.commitment;
          const at = nowIso(now);
          const records: ActRecord[] = [];
          if (firstOfTwo) {
            const first: FirstApproval = { reviewer, commitment, note: note ?? null, receipt_id: receipt.receipt_id, at };
            if (!(await recordFirstApproval(tx, r.id, first))) throw new StateChanged();
            return {
              writes: { receipt, records },
              reply: reply({
                ...reviewView(ctx, { ...r, first_approval: first }, now),
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
              }),
            };
          }
          if (!(await decideReview(tx, r.id, to, at, receipt.receipt_id, { reviewer, commitment, note: note ?? null })))
            throw new StateChanged();
          const after: Review = {
            ...r,
            state: to,
            decided_at: at,
            decided_by: reviewer,
            reviewer_commitment: commitment,
            note: note ?? null,
            decision_receipt_id: receipt.receipt_id,
          };
          const alert = reviewAlert(r.account_id, 'review.decided', fuseOf(r), {
            ...reviewEvent(ctx, after),
            state: to,
            decided_by: reviewer,
            receipt_id: receipt.receipt_id,
            verify_url: receipt.verify_url,
          });
          records.push(alert);
          return {
            writes: { receipt, records },
            reply: reply({ ...reviewView(ctx, after, now), receipt_id: receipt.receipt_id, verify_url: receipt.verify_url }),
          };
        },
      });
      reviewNotifier(ctx).notify(id);
      return answer;
    } catch (e) {
      if (retryIfStale(e, attempt)) continue;
      throw e;
    }
  }
}

/** What a decision receipt of a review that needs two approvals says of them: the count, and the first approval's receipt once given. */
function twoApproversFacts(r: Review, firstOfTwo: boolean): Record<string, unknown> {
  if (r.approvals_required !== 2) return {};
  return firstOfTwo
    ? { approvals_required: 2 }
    : { approvals_required: 2, ...(r.first_approval ? { first_approval_receipt_id: r.first_approval.receipt_id } : {}) };
}

function answerProblem(refusal: AnswerRefusal, r: Review, now: Date): Problem {
  if (refusal === 'four_eyes') {
    return new Problem({
      status: 403,
      code: 'four_eyes',
      title: 'Forbidden',
      detail: 'the key that made the request held for review may not answer its review: another operator must',
      extra: { review_id: r.id },
    });
  }
  if (refusal === 'second_approver_required') {
    return new Problem({
      status: 403,
      code: 'second_approver_required',
      title: 'Forbidden',
      detail: 'this review needs two approvals from two different reviewers, and you gave the first: another operator must give the second',
      extra: { review_id: r.id },
    });
  }
  const state = reviewStateAt(r, now);
  return new Problem({
    status: 409,
    code: refusal,
    title: 'Conflict',
    detail:
      refusal === 'review_expired' ? `review ${r.id} expired at ${r.expires_at} without an answer` : `review ${r.id} is already ${state}`,
    extra: { review_id: r.id, state },
  });
}

const USE_DETAIL: Record<UseRefusal, string> = {
  review_pending: 'no one has answered this review yet: wait for it (GET its review_url with ?wait=30)',
  review_denied: 'this review was denied: the request may not go on',
  review_expired: 'this review expired without an answer: send the request again (without review_id) to open a new one',
  review_used: 'this approval has cleared its request already: an approval is used once',
  review_mismatch:
    'this review approved another request: an approval clears only the very request that was held (same key, operation, amount, counterparty)',
};

function useProblem(refusal: UseRefusal, r: Review, now: Date): Problem {
  return new Problem({
    status: 409,
    code: refusal,
    title: 'Conflict',
    detail: USE_DETAIL[refusal],
    extra: { review_id: r.id, state: reviewStateAt(r, now) },
  });
}

// ---- the agent waits -------------------------------------------------------------------------------

/** Wakes the long polls of this process waiting on a review when it is decided. */
export class ReviewNotifier {
  readonly #waiting = new Map<string, Set<() => void>>();

  notify(id: string): void {
    const set = this.#waiting.get(id);
    if (!set) return;
    this.#waiting.delete(id);
    for (const wake of set) wake();
  }

  /** Resolves when `id` is decided in this process, or after `ms`. */
  wait(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.#waiting.get(id);
      if (!set) this.#waiting.set(id, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.#waiting.get(id) === set) this.#waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }
}

const notifiers = new WeakMap<AppContext, ReviewNotifier>();
export function reviewNotifier(ctx: AppContext): ReviewNotifier {
  let n = notifiers.get(ctx);
  if (!n) notifiers.set(ctx, (n = new ReviewNotifier()));
  return n;
}

/** The review once it is no longer pending, or as it is after `seconds`: woken at once by a decision here, reading again each second for one elsewhere. */
async function awaitDecision(ctx: AppContext, r: Review, seconds: number): Promise<Review> {
  const deadline = Date.now() + seconds * 1000;
  let current = r;
  while (reviewStateAt(current, new Date()) === 'pending') {
    const left = deadline - Date.now();
    if (left <= 0) break;
    await reviewNotifier(ctx).wait(r.id, Math.min(left, REREAD_MS, Date.parse(current.expires_at) - Date.now() + 1));
    current = (await getReview(ctx.ledger.read, r.id)) ?? current;
  }
  return current;
}

// ---- expiry ----------------------------------------------------------------------------------------

/**
 * Records the expiry of every pending review past its time (`review_expired`,
 * SILENCE), and writes the `review_opened` receipts a stopped process left
 * unwritten. Each is its own act with a conditional update: an approval that
 * won the race leaves the expiry nothing to do, and the other way round.
 */
export async function sweepReviews(ctx: AppContext, now = new Date()): Promise<number> {
  let done = 0;
  for (const r of await unopenedReviews(ctx.ledger.read, new Date(now.getTime() - 60_000).toISOString(), 100))
    await afterHoldOpened(ctx, r.id);
  for (const r of await dueReviews(ctx.ledger.read, nowIso(now), 100)) {
    try {
      await ctx.ledger.act({
        needs: { test: ownerParts(r.account_id).mode === 'test' },
        run: async (tx, state) => {
          const receipt = state.receipt(ctx, {
            kind: 'review_expired',
            decision: DECISION_WORD.expired,
            subject: r.id,
            key_id: r.key_id,
            data: {
              review_id: r.id,
              hold_receipt_id: r.hold_receipt_id,
              opened_receipt_id: r.opened_receipt_id,
              operation: r.operation,
              expires_at: r.expires_at,
            },
          });
          if (!(await decideReview(tx, r.id, 'expired', nowIso(now), receipt.receipt_id, null))) throw new StateChanged();
          const alert = reviewAlert(r.account_id, 'review.expired', fuseOf(r), {
            ...reviewEvent(ctx, r),
            state: 'expired',
            receipt_id: receipt.receipt_id,
            verify_url: receipt.verify_url,
          });
          return { writes: { receipt, records: [alert] }, result: undefined };
        },
      });
      done++;
      reviewNotifier(ctx).notify(r.id);
    } catch (e) {
      if (!(e instanceof StateChanged)) throw e;
    }
  }
  return done;
}

// ---- routes ----------------------------------------------------------------------------------------

export function registerReviewRoutes(router: Router, ctx: AppContext): void {
  const ownedReview = async (event: H3Event, key: ApiKey): Promise<Review> => {
    const raw = String(event.context.params?.review_id ?? '');
    const id = reviewIdSchema.safeParse(raw);
    const r = id.success ? await getReview(ctx.ledger.read, id.data) : undefined;
    if (!r || r.account_id !== ownerId(key)) throw notFound(`no review ${raw} in this account`, 'unknown_review');
    return r;
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: REVIEWS_PATH,
      tool: 'reviews_list',
      summary: "The account's reviews (questions a HOLD put to a person), newest first; ?state=pending for the queue",
      auth: 'key',
      tag: 'reviews',
      query: listQuery,
      response: listResponse,
    },
    async ({ key, input: q }) => {
      const now = new Date();
      const owner = ownerId(key);
      // A pending review past its expiry is listed as expired, under `expired`, before the job records it.
      const stored =
        q.state === 'expired'
          ? [
              ...(await listReviews(ctx.ledger.read, owner, 'expired', q.limit)),
              ...(await listReviews(ctx.ledger.read, owner, 'pending', q.limit)),
            ]
          : await listReviews(ctx.ledger.read, owner, q.state, q.limit);
      const data = stored.filter((r) => !q.state || reviewStateAt(r, now) === q.state).map((r) => reviewView(ctx, r, now));
      const pending =
        q.state === 'pending'
          ? data.length
          : (await listReviews(ctx.ledger.read, owner, 'pending', 200)).filter((r) => reviewStateAt(r, now) === 'pending').length;
      return reply({ object: 'list', pending_count: pending, data });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: `${REVIEWS_PATH}/:review_id`,
      tool: 'review_get',
      summary: 'One review; with ?wait=N (at most 30 s) the answer waits until it is decided or expires, and comes at once when it is',
      auth: 'key',
      tag: 'reviews',
      query: waitQuery,
      response: reviewObject,
      problems: [404],
    },
    async ({ key, input, event }) => {
      const { wait } = input;
      const r = await ownedReview(event, key);
      const current = wait ? await awaitDecision(ctx, r, wait) : r;
      return reply(reviewView(ctx, current));
    },
  );

  for (const [verb, to] of [
    ['approve', 'approved'],
    ['deny', 'denied'],
  ] as const) {
    operation(
      router,
      ctx,
      {
        method: 'POST',
        path: `${REVIEWS_PATH}/:review_id/${verb}`,
        auth: 'key',
        tool: `review_${verb}`,
        summary:
          verb === 'approve'
            ? 'Approve a pending review: the held request may then be sent again with review_id, once'
            : 'Deny a pending review: the held request may not go on',
        tag: 'reviews',
        role: 'operator',
        body: answerRequest,
        optionalBody: true,
        response: reviewObject,
        problems: [403, 404, 409],
        precheck: ownedReview,
        example: { note: verb === 'approve' ? 'checked the invoice with the supplier' : 'not on the approved supplier list' },
        act: {},
      },
      ({ input: b, key, event, checked: r }) => answerReview(event, ctx, key, r.id, to, { kind: 'key', id: key.id }, b.note),
    );
  }

  router.job(intervalJob(ctx, 'review expiry', SWEEP_MS, async () => void (await sweepReviews(ctx))));
}

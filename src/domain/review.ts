/**
 * Reviews (docs/reviews.md): the rules of the question a HOLD puts to a person.
 * A review is pending until an operator of the account approves or denies it,
 * or until it expires; an approval clears the held request once.
 */
import { parseDecimal } from '../catalog/money.ts';

export type ReviewState = 'pending' | 'approved' | 'denied' | 'expired';

/** What the rules read of a review. */
export interface ReviewFacts {
  key_id: string;
  operation: string;
  fingerprint: string;
  state: ReviewState;
  expires_at: string;
  used_at: string | null;
}

/** Shortest and longest wait a mandate or a key may set for its reviews (seconds): a minute, 30 days. */
export const REVIEW_TTL_MIN_SECONDS = 60;
export const REVIEW_TTL_MAX_SECONDS = 30 * 86_400;

/** Longest note a reviewer may leave (characters). */
export const REVIEW_NOTE_MAX = 2000;

/** The state as of `now`: a pending review past its expiry is expired, whether or not the expiry job has recorded it yet. */
export function reviewStateAt(r: Pick<ReviewFacts, 'state' | 'expires_at'>, now: Date): ReviewState {
  return r.state === 'pending' && Date.parse(r.expires_at) <= now.getTime() ? 'expired' : r.state;
}

/** Whether a new HOLD of the same request answers with this review instead of opening another: it is still open, or approved and unused. */
export function reviewStillOpen(r: ReviewFacts, now: Date): boolean {
  const state = reviewStateAt(r, now);
  return state === 'pending' || (state === 'approved' && r.used_at === null);
}

export type UseRefusal = 'review_pending' | 'review_denied' | 'review_expired' | 'review_used' | 'review_mismatch';

/**
 * Why an approval may not clear this request, or undefined when it may: the
 * request must be the one held (same key, operation and fingerprint), and the
 * review approved, unused and decided.
 */
export function approvalRefusal(
  r: ReviewFacts,
  request: { keyId: string; operation: string; fingerprint: string },
  now: Date,
): UseRefusal | undefined {
  if (r.key_id !== request.keyId || r.operation !== request.operation || r.fingerprint !== request.fingerprint) return 'review_mismatch';
  const state = reviewStateAt(r, now);
  if (state === 'pending') return 'review_pending';
  if (state === 'denied') return 'review_denied';
  if (state === 'expired') return 'review_expired';
  if (r.used_at !== null) return 'review_used';
  return undefined;
}

export type AnswerRefusal = 'four_eyes' | 'second_approver_required' | 'review_decided' | 'review_expired';

/** Who answers: an operator key of the account, or one of its people signed in. */
export interface Reviewer {
  kind: 'key' | 'person';
  id: string;
}

/**
 * Why this reviewer may not answer the review now, or undefined: never the
 * requesting key (four eyes), only while pending, and of a review that needs
 * two approvals, the second approval not by the first approver.
 */
export function answerRefusal(
  r: ReviewFacts & { first_approval?: { reviewer: Reviewer } | null },
  answer: { keyId: string; reviewer: Reviewer; to: 'approved' | 'denied' },
  now: Date,
): AnswerRefusal | undefined {
  if (answer.keyId === r.key_id) return 'four_eyes';
  const state = reviewStateAt(r, now);
  if (state === 'expired') return 'review_expired';
  if (state !== 'pending') return 'review_decided';
  const first = r.first_approval?.reviewer;
  if (answer.to === 'approved' && first && first.kind === answer.reviewer.kind && first.id === answer.reviewer.id)
    return 'second_approver_required';
  return undefined;
}

/** The amount a held request puts at stake: a decimal in USD, or an amount in another currency. */
export type HeldAmount = { usd: string } | { otherCurrency: true };

/**
 * Approvals a review needs (docs/reviews.md): two when the operator set an
 * amount (`above`, REVIEW_TWO_APPROVERS_ABOVE_USD, a decimal USD string) and
 * the held request's amount in USD is above it, or is in another currency (no
 * rate to compare it by: the stricter rule); else one.
 */
export function approvalsRequired(amount: HeldAmount | undefined, above: string | undefined): 1 | 2 {
  if (above === undefined || amount === undefined) return 1;
  if ('otherCurrency' in amount) return 2;
  const scale = Math.max(decimals(amount.usd), decimals(above));
  return parseDecimal(amount.usd, scale) > parseDecimal(above, scale) ? 2 : 1;
}

const decimals = (text: string): number => text.split('.')[1]?.length ?? 0;

/**
 * What a review asks, in one line of plain text, from its summary: the
 * transfer of an evaluate, the act and exposure of an execute gate, the job
 * and licence of a PAS-A pre-bind (mail, queue and terminal say it alike).
 */
export function askedOf(summary: Record<string, unknown>): string {
  const s = (v: unknown, none: string) => (v === null || v === undefined ? none : String(v));
  const t = summary.transfer as Record<string, unknown> | undefined;
  if (t) return `${s(t.amount, '?')} ${s(t.currency, '')} to ${s(t.counterparty, 'an unnamed counterparty')}`;
  if (summary.license_id !== undefined) {
    return `pre-bind of job ${s(summary.job_id, '?')} under licence ${s(summary.license_id, '?')}${summary.scope === 'bind_and_issue' ? ' (bind and issue asked)' : ''}`;
  }
  return `${s((summary.action as Record<string, unknown> | undefined)?.kind, 'an act')} of ${s(summary.exposure_usd, '0.00')} USD`;
}

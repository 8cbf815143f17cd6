/**
 * The words a receipt's reader chooses among on the dashboard's receipts page
 * (its filters are choices where the values are known), and the two facts
 * every row states: why the act was decided so, and what it charged. Pure.
 */
import { formatUsd } from '../catalog/money.ts';
import { REFUSALS } from './pricing.ts';

/** Decisions that refuse an act: the priced refusals and the pre-finality NO_GO. */
export const RECEIPT_REFUSALS: readonly string[] = [...REFUSALS, 'NO_GO'];

/** Decision words a keyed act's receipt carries (a fuse change's decision is the state it moved to). */
export const RECEIPT_DECISIONS: readonly string[] = [
  'PERMIT',
  'ALLOW',
  'GO',
  ...RECEIPT_REFUSALS,
  'HALT',
  'LIVE',
  'DEAD',
  'CLASSIFIED',
  'UNCLASSIFIED',
];

/** The kinds an account's keys make most; the filter still takes any other kind from a link. */
export const RECEIPT_KINDS: readonly string[] = [
  'hop',
  'lookup',
  'classify',
  'act',
  'prefinality',
  'prefinality_rtp_gate',
  'fuse_create',
  'fuse_dead',
  'fuse_charge',
  'review_opened',
  'review_approved',
  'review_denied',
  'review_expired',
  'operator_checkout',
];

interface ReceiptFacts {
  data?: Record<string, unknown> | undefined;
  charges?: ReadonlyArray<{ amount_micros: number }> | undefined;
}

/** Why the act was decided so, in the receipt's own words: its reason, its reasons' codes, or the rule that fired. */
export function receiptReason(p: ReceiptFacts): string | null {
  const d = p.data ?? {};
  if (typeof d.reason === 'string') return d.reason;
  if (Array.isArray(d.reasons) && d.reasons.length) return d.reasons.map(String).join(', ');
  if (typeof d.rule === 'string') return d.rule;
  return null;
}

/** What the act charged its key, as a decimal USD string ("0.00" when nothing). */
export function receiptAmountUsd(p: ReceiptFacts): string {
  return formatUsd((p.charges ?? []).reduce((sum, c) => sum + BigInt(c.amount_micros), 0n));
}

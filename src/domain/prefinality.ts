/**
 * Pre-finality clearance (SPEC 1, 2.2): a rail-agnostic GO / NO_GO / HOLD
 * decision before an irreversible commit. Pure: no I/O. The rules are data
 * (src/content/prefinality-rules.json): an ordered list, the first rule whose
 * check fires decides, and the decision names it.
 *
 * Amounts are decimal strings compared exactly as scaled integers (never floats).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { FuseState } from './fuse.ts';
import { decideHop } from './fuse.ts';
import { MoneyError, parseDecimal } from '../catalog/money.ts';
import { TOOL_NAME, TOOL_NAME_MESSAGE } from './tool-name.ts';
import { REVIEW_TTL_MAX_SECONDS, REVIEW_TTL_MIN_SECONDS } from './review.ts';

export const RAILS = ['x402', 'rtp'] as const;
export type Rail = (typeof RAILS)[number];
export const DECISIONS = ['GO', 'NO_GO', 'HOLD'] as const;
export type Decision = (typeof DECISIONS)[number];
export const TRANSFER_FIELDS = ['account_number', 'amount', 'counterparty', 'currency', 'routing_number'] as const;
export type TransferField = (typeof TRANSFER_FIELDS)[number];

const CHECKS = [
  'fuse_dead',
  'fuse_unsigned',
  'fuse_unknown',
  'transfer_incomplete',
  'amount_not_positive',
  'mandate_expired',
  'mandate_rail',
  'mandate_currency',
  'mandate_limit',
  'mandate_counterparty',
  'context_risk_flag',
  'review_threshold',
  'always',
] as const;
type Check = (typeof CHECKS)[number];

const DECIMAL = /^\d{1,30}(\.\d{1,30})?$/;

const rulesFileSchema = z.object({
  version: z.string(),
  amount_scale: z.number().int().min(0).max(36),
  required_fields: z.record(z.enum(RAILS), z.array(z.enum(TRANSFER_FIELDS))),
  review_thresholds: z.record(z.string(), z.string().regex(DECIMAL)),
  metering: z.record(z.string(), z.object({ sku: z.string(), nap: z.boolean() })),
  rules: z.array(z.object({ id: z.string(), decision: z.enum(DECISIONS), check: z.enum(CHECKS), description: z.string() })).min(1),
});
export type RuleSet = z.infer<typeof rulesFileSchema>;

/** The rule set, validated at load: a bad rules file stops start-up. */
export const RULES: RuleSet = rulesFileSchema.parse(
  JSON.parse(readFileSync(new URL('../content/prefinality-rules.json', import.meta.url), 'utf8')),
);

/** The meter line for an outcome ("GO", "NO_GO", "HOLD", "rtp_gate_pass", "rtp_gate_refuse"). */
export function meteringOf(outcome: string, rules: RuleSet = RULES): { sku: string; nap: boolean } {
  const m = rules.metering[outcome];
  if (!m) throw new Error(`no metering is defined for ${outcome}`);
  return m;
}

/** Parses a decimal amount exactly at the rule set's scale. */
export function parseAmount(text: string, rules: RuleSet = RULES): bigint {
  return parseDecimal(text, rules.amount_scale);
}

const amount = z
  .string()
  .regex(DECIMAL, 'a non-negative decimal string such as "125.00"')
  .refine((s) => {
    try {
      parseAmount(s);
      return true;
    } catch (e) {
      if (e instanceof MoneyError) return false;
      throw e;
    }
  }, `at most ${RULES.amount_scale} significant decimal places`);
const currency = z.string().regex(/^[A-Z0-9]{3,12}$/, 'an upper-case currency or asset code such as "USD" or "USDC"');
const text = (max: number) => z.string().min(1).max(max);

/** SPEC 2.2 transfer: five optional strings, nothing else. */
export const transferSchema = z.strictObject({
  account_number: text(64).optional(),
  amount: amount.optional(),
  counterparty: text(256).optional(),
  currency: currency.optional(),
  routing_number: text(64).optional(),
});
export type Transfer = z.infer<typeof transferSchema>;

/** The mandate (SPEC: inner fields not shown; ours, strict so a misspelt limit is refused, not ignored). */
export const mandateSchema = z.strictObject({
  max_amount: amount.optional(),
  currency: currency.optional(),
  counterparties: z.array(text(256)).max(1000).optional(),
  rails: z.array(z.enum(RAILS)).min(1).optional(),
  expires_at: z.iso.datetime({ offset: true }).optional(),
  review_above: amount.optional(),
  /** How long a review this mandate's HOLD opens waits for a person (docs/reviews.md); default REVIEW_TTL_SECONDS. */
  review_expires_in_seconds: z.number().int().min(REVIEW_TTL_MIN_SECONDS).max(REVIEW_TTL_MAX_SECONDS).optional(),
});
export type Mandate = z.infer<typeof mandateSchema>;

/** The context (SPEC: inner fields not shown). Known fields are checked; others are kept as the caller's metadata. */
export const contextSchema = z.looseObject({
  fuse_id: text(128).optional(),
  risk_flags: z.array(text(64)).max(100).optional(),
  review_requested: z.boolean().optional(),
  /** The agent's tool this evaluate gates (the MCP proxy and the guards send it): named in the receipt. */
  tool: z.string().regex(TOOL_NAME, TOOL_NAME_MESSAGE).optional(),
});
export type Context = z.infer<typeof contextSchema>;

/** SPEC 2.2: the evaluate request. */
export const evaluateRequestSchema = z.strictObject({
  rail: z.enum(RAILS),
  transfer: transferSchema,
  mandate: mandateSchema.optional(),
  context: contextSchema.optional(),
  /** The approved review of this very request (docs/reviews.md): a HOLD it answered is then a GO, once. */
  review_id: z
    .string()
    .regex(/^rev_[A-Za-z0-9_-]{1,64}$/, 'a review id such as rev_…')
    .optional(),
});
export type EvaluateRequest = z.infer<typeof evaluateRequestSchema>;

/** What the ledger knows that the rules need: the state of the fuse named in the context. */
export interface Facts {
  /** undefined when the context names no fuse; state undefined when the caller has no such fuse. */
  fuse?: { id: string; state: FuseState | undefined };
  now: Date;
}

export interface Evaluation {
  decision: Decision;
  rule: { id: string; description: string };
  /** Why the deciding rule fired, for people. */
  detail: string;
  /** Request fields the deciding rule looked at. */
  fields: string[];
}

interface Fired {
  detail: string;
  fields: string[];
}

type CheckFn = (req: EvaluateRequest, facts: Facts, rules: RuleSet) => Fired | undefined;

/** Fires when a hop on the context's fuse would be refused with `decision` (DENY: DEAD; SILENCE: UNSIGNED). */
function fuseRefusal(f: Facts, decision: 'DENY' | 'SILENCE'): Fired | undefined {
  if (f.fuse?.state === undefined) return undefined;
  const hop = decideHop(f.fuse.state, undefined, []);
  return !hop.ok && hop.decision === decision ? { detail: `fuse ${f.fuse.id}: ${hop.reason}`, fields: ['context.fuse_id'] } : undefined;
}

const CHECK_FNS: Record<Check, CheckFn> = {
  // The fuse checks are the hop's own rule (domain/fuse.ts): what a hop refuses, evaluate refuses.
  fuse_dead: (_r, f) => fuseRefusal(f, 'DENY'),
  fuse_unsigned: (_r, f) => fuseRefusal(f, 'SILENCE'),
  fuse_unknown: (_r, f) =>
    f.fuse && f.fuse.state === undefined
      ? { detail: `no fuse ${f.fuse.id} exists for this caller`, fields: ['context.fuse_id'] }
      : undefined,
  transfer_incomplete: (r, _f, rules) => {
    const missing = (rules.required_fields[r.rail] ?? []).filter((k) => r.transfer[k] === undefined);
    return missing.length
      ? { detail: `rail ${r.rail} needs ${missing.map((k) => `transfer.${k}`).join(', ')}`, fields: missing.map((k) => `transfer.${k}`) }
      : undefined;
  },
  amount_not_positive: (r, _f, rules) =>
    r.transfer.amount !== undefined && parseAmount(r.transfer.amount, rules) === 0n
      ? { detail: 'the amount is zero', fields: ['transfer.amount'] }
      : undefined,
  mandate_expired: (r, f) =>
    r.mandate?.expires_at !== undefined && Date.parse(r.mandate.expires_at) <= f.now.getTime()
      ? { detail: `the mandate expired at ${r.mandate.expires_at}`, fields: ['mandate.expires_at'] }
      : undefined,
  mandate_rail: (r) =>
    r.mandate?.rails && !r.mandate.rails.includes(r.rail)
      ? { detail: `the mandate allows ${r.mandate.rails.join(', ')}, not ${r.rail}`, fields: ['rail', 'mandate.rails'] }
      : undefined,
  mandate_currency: (r) =>
    r.mandate?.currency !== undefined && r.transfer.currency !== undefined && r.transfer.currency !== r.mandate.currency
      ? {
          detail: `the transfer is in ${r.transfer.currency}, the mandate in ${r.mandate.currency}`,
          fields: ['transfer.currency', 'mandate.currency'],
        }
      : undefined,
  mandate_limit: (r, _f, rules) =>
    r.mandate?.max_amount !== undefined &&
    r.transfer.amount !== undefined &&
    parseAmount(r.transfer.amount, rules) > parseAmount(r.mandate.max_amount, rules)
      ? {
          detail: `${r.transfer.amount} exceeds the mandate's max_amount ${r.mandate.max_amount}`,
          fields: ['transfer.amount', 'mandate.max_amount'],
        }
      : undefined,
  mandate_counterparty: (r) =>
    r.mandate?.counterparties && (r.transfer.counterparty === undefined || !r.mandate.counterparties.includes(r.transfer.counterparty))
      ? { detail: 'the counterparty is not one the mandate allows', fields: ['transfer.counterparty', 'mandate.counterparties'] }
      : undefined,
  context_risk_flag: (r) => {
    const flags = r.context?.risk_flags ?? [];
    if (flags.length) return { detail: `risk flags: ${flags.join(', ')}`, fields: ['context.risk_flags'] };
    if (r.context?.review_requested === true) return { detail: 'human review was requested', fields: ['context.review_requested'] };
    return undefined;
  },
  review_threshold: (r, _f, rules) => {
    const { amount: a, currency: c } = r.transfer;
    if (a === undefined) return undefined;
    const fromMandate = r.mandate?.review_above;
    const threshold = fromMandate ?? (c !== undefined ? rules.review_thresholds[c] : undefined);
    if (threshold === undefined || parseAmount(a, rules) <= parseAmount(threshold, rules)) return undefined;
    return {
      detail: `${a} is above the review threshold ${threshold}${fromMandate ? ' (mandate.review_above)' : ` ${c}`}`,
      fields: fromMandate ? ['transfer.amount', 'mandate.review_above'] : ['transfer.amount'],
    };
  },
  always: () => ({ detail: 'every rule passed', fields: [] }),
};

/** Runs the rules in order; the first that fires decides. Fails closed (NO_GO) if none does. */
export function evaluatePrefinality(req: EvaluateRequest, facts: Facts, rules: RuleSet = RULES): Evaluation {
  for (const rule of rules.rules) {
    const fired = CHECK_FNS[rule.check](req, facts, rules);
    if (fired) return { decision: rule.decision, rule: { id: rule.id, description: rule.description }, ...fired };
  }
  return {
    decision: 'NO_GO',
    rule: { id: 'no_rule', description: 'no rule decided: fail closed' },
    detail: 'no rule decided',
    fields: [],
  };
}

/** RTP payment order (the PSP's order, compared against the receipt's transfer). */
export const paymentOrderSchema = z.strictObject({
  amount,
  currency,
  account_number: text(64),
  routing_number: text(64),
  counterparty: text(256),
  /** The PSP's own reference, if any; part of the order's fingerprint. */
  order_id: text(128).optional(),
});
export type PaymentOrder = z.infer<typeof paymentOrderSchema>;

/** The transfer fields on which a payment order differs from a cleared transfer (amounts compared exactly). */
export function orderMismatches(cleared: Transfer, order: PaymentOrder, rules: RuleSet = RULES): TransferField[] {
  return TRANSFER_FIELDS.filter((k) => {
    const a = cleared[k];
    const b = order[k];
    if (a === undefined) return true;
    return k === 'amount' ? parseAmount(a, rules) !== parseAmount(b, rules) : a !== b;
  });
}

/** Why the RTP gate refuses a receipt for a payment order (empty: it passes). */
export interface RtpGateReason {
  code: string;
  detail: string;
  fields?: string[];
}

/** What the RTP gate rule looks at: the verified receipt's claims, the order, the presenting key, and the receipt's earlier use. */
export interface RtpGateFacts {
  claims: { sub: string; decision: string; rail: string; transfer: Transfer; demo?: boolean | undefined };
  order: PaymentOrder;
  /** The key presenting the receipt. */
  keyId: string;
  /** True when the receipt (its jti) already cleared a payment order, this one included. */
  used: boolean;
}

/**
 * The RTP gate: a GO receipt clears ONE payment order, ONCE, for the key it
 * was issued to (its `sub`). A second presentation, even of the same order,
 * is refused (`receipt_used`); an Idempotency-Key retry of the first call
 * gets the first answer instead.
 */
export function rtpGateReasons(f: RtpGateFacts, rules: RuleSet = RULES): RtpGateReason[] {
  const c = f.claims;
  const reasons: RtpGateReason[] = [];
  if (c.decision !== 'GO') reasons.push({ code: 'not_go', detail: `the receipt's decision is ${c.decision}, not GO` });
  if (c.demo) reasons.push({ code: 'demo_receipt', detail: 'a demo receipt clears no payment' });
  else if (c.sub !== f.keyId)
    reasons.push({ code: 'wrong_key', detail: 'the receipt was issued to another API key: only the key it was issued to can present it' });
  if (c.rail !== 'rtp') reasons.push({ code: 'wrong_rail', detail: `the receipt clears rail ${c.rail}, not rtp`, fields: ['rail'] });
  const differ = orderMismatches(c.transfer, f.order, rules);
  if (differ.length) {
    reasons.push({
      code: 'order_mismatch',
      detail: `the payment order differs from the cleared transfer in ${differ.join(', ')}`,
      fields: differ.map((k) => `payment_order.${k}`),
    });
  }
  if (f.used)
    reasons.push({
      code: 'receipt_used',
      detail: 'this receipt has already cleared a payment order: a receipt clears one payment order, once',
    });
  return reasons;
}

/** Currencies whose amounts are USD for the Clear tiers (1 unit = 1 USD). Other currencies are not counted: we convert nothing. */
export const USD_CURRENCIES: readonly string[] = ['USD', 'USDC'];

/**
 * The cleared exposure of a GO, micro-USD (rounded half up), or undefined
 * when it clears none in USD: a GO clears its transfer amount like a PERMIT
 * on the execute gate, when the transfer is in USD or USDC.
 */
export function goExposureMicros(transfer: Transfer, rules: RuleSet = RULES): bigint | undefined {
  if (transfer.amount === undefined || transfer.currency === undefined || !USD_CURRENCIES.includes(transfer.currency)) return undefined;
  const scaled = parseAmount(transfer.amount, rules);
  const per = 10n ** BigInt(Math.max(0, rules.amount_scale - 6));
  return rules.amount_scale >= 6 ? (scaled + per / 2n) / per : scaled * 10n ** BigInt(6 - rules.amount_scale);
}

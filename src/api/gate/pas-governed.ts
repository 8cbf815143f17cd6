/**
 * The governed PAS decisions (SPEC 2.3, 3): each reads what it needs under the
 * act's lock, decides with src/domain/pas.ts, and commits its receipt, its
 * state change and its charge in one transaction (pas.ts declares the
 * operations that call these).
 */
import type { ActEvent } from '../act-event.ts';
import { hopLimitProblem } from '../hop-limit.ts';
import { z } from 'zod';
import { decideHop, type HopOutcome } from '../../domain/fuse.ts';
import { MoneyError, formatUsd, usdToMicros } from '../../catalog/money.ts';
import {
  PRE_BIND_A_STATUS,
  decideAuthority,
  decideBindCheck,
  decidePreBindA,
  decidePreBindB,
  decideRedeem,
  spendFingerprint,
  type LicenseState,
  type RedeemDecision,
} from '../../domain/pas.ts';
import { newId, newSortableId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { DRILL_OWNER, type Fuse } from '../../ledger/fuses.ts';
import { addExclusionLeaf } from '../../ledger/pas-exclusion.ts';
import {
  consumeTicket,
  GRANTS,
  BOUND_JOBS,
  boundJobKey,
  GROUP_ISSUED_JOBS,
  LICENSE_VIEWS,
  licenseKey,
  licenseStateOf,
  REDEEM_VIEWS,
  type JobReceiptRow,
  type RedeemView,
  PAS_ISSUES,
  PAS_JOB_RECEIPTS,
  PAS_TICKETS,
} from '../../ledger/pas.ts';
import { type ActRecord, record } from '../../ledger/records.ts';
import { type Receipt } from '../../ledger/receipts.ts';
import type { AppContext } from '../context.ts';
import { badRequest, notFound } from '../problem.ts';
import { chargeView } from '../charge.ts';
import { reply, type Reply } from '../reply.ts';
import { visibleIn, type Caller } from './governed.ts';
import type { Bill } from '../charges.ts';
import { commitAct } from '../act.ts';
import type { ActState, RowNeed } from '../../ledger/acts.ts';
import { stateChangedProblem } from '../stale-retry.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import type { Review } from '../../ledger/reviews.ts';
import {
  approvalFields,
  approvalLink,
  commitHeldAct,
  heldRequest,
  holdFields,
  HoldNeedsReview,
  reviewUrl,
  type HeldRequest,
  type ReviewableDecision,
  type ReviewStep,
} from './reviews.ts';
import { authorityRequest, redeemRequest } from './pas-schemas.ts';

/** What a PAS decision is charged: ALLOW is one governed act; every refusal (BLOCK, HOLD, HALT) is the NAP `hold`. */
const chargeOf = (bill: Bill, decision: string) => bill(decision === 'ALLOW' ? 'execute_gate' : 'hold');

/** The answer with the charge it made (the very line the act writes): null for a public demo. */
function withCharge(r: Reply, charge: Parameters<typeof chargeView>[0] | undefined): Reply {
  return { ...r, body: { ...(r.body as object), charge: charge ? chargeView(charge) : null } };
}

const ownerOf = (c: Caller) => (c.key ? ownerId(c.key) : DRILL_OWNER);
export const receiptBody = (r: Receipt) => ({ receipt_id: r.receipt_id, verify_url: r.verify_url });

interface PasAct<S, D extends { decision: string }> {
  kind: string;
  fuseId: string;
  jobId: string | undefined;
  /** Rows of the area read with the group's, that `read` takes through `state.row` (ledger/acts.ts). */
  rows?: RowNeed[];
  /** Area state the decision depends on, as the acts before this one in the group left it. */
  read: (state: ActState) => Promise<S>;
  decide: (hop: HopOutcome, s: S) => D;
  data: (d: D, s: S) => Record<string, unknown>;
  /** What the decision makes beside its receipt: records written with the group's, and what the answer shows of them. */
  write?: (d: D, s: S, receipt: Receipt, now: string, state: ActState, review: PasReview) => Promise<Made>;
  answer: (d: D, s: S, fuse: Fuse, receipt: Receipt, made: Made['shown'] | undefined) => Reply;
  /**
   * A decision that may HOLD for a person (docs/reviews.md): the keyed request a
   * HOLD opens a review of, and the review it names. A HOLD answers with the
   * review; an ALLOW uses the approval named, once; nothing else changes.
   */
  review?: { held: HeldRequest; reviewId: string | undefined };
}

interface Made {
  records?: ActRecord[];
  shown: Record<string, unknown>;
  /** What a review this decision opens shows its reviewer. */
  summary?: Record<string, unknown>;
}

/** What a PAS decision has of a review: the one its HOLD answers with (`opens` when this HOLD opens it), or the approval its ALLOW uses. */
interface PasReview {
  holding?: Review | undefined;
  opens?: boolean;
  approval?: Review | undefined;
}

/**
 * A PAS decision that hops first, as an act of the pipeline (api/act.ts): under
 * the write lock, with the acts queued beside it, the fuse and the area state
 * are read, the decision made (pure), the hop counted and charged, and the
 * receipt and the area's writes recorded. No state is read before the lock, so
 * nothing is decided twice.
 */
async function pasGoverned<S, D extends { decision: string }>(
  event: ActEvent,
  ctx: AppContext,
  caller: Caller,
  bill: Bill,
  act: PasAct<S, D>,
): Promise<Reply> {
  const key = caller.key;
  if (key && key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  const run = async (state: ActState, step: ReviewStep | undefined): Promise<ReviewableDecision> => {
    const now = nowIso();
    const fuse = visibleIn(caller, act.fuseId, state.fuse);
    const s = await act.read(state);
    const d = act.decide(decideHop(fuse.state, undefined, caller.surface), s);
    const held = d.decision === 'HOLD';
    if (held && act.review && !step) throw new HoldNeedsReview();
    // An approval lets through an ALLOW of the rules only (it is then used); a HOLD or BLOCK stands and leaves it unused.
    const review: PasReview = held
      ? { holding: step?.hold?.review ?? step?.approval, opens: step?.hold?.opens ?? false }
      : { approval: d.decision === 'ALLOW' ? step?.approval : undefined };
    // The one line the receipt states and the answer shows.
    const charge = key ? { keyId: key.id, ...chargeOf(bill, d.decision) } : undefined;
    const receipt = state.receipt(
      ctx,
      {
        kind: act.kind,
        decision: d.decision,
        subject: act.jobId ?? fuse.id,
        ...(key ? { key_id: key.id } : { demo: true }),
        data: {
          fuse_id: fuse.id,
          fuse_state: fuse.state,
          ...act.data(d, s),
          ...(review.holding ? { review_id: review.holding.id } : {}),
          ...(review.approval ? { review: approvalLink(review.approval) } : {}),
        },
      },
      { charges: charge ? [charge] : [] },
    );
    const made = await act.write?.(d, s, receipt, now, state, review);
    const listed = key && act.jobId ? [jobReceipt({ keyId: ownerId(key), jobId: act.jobId, receiptId: receipt.receipt_id })] : [];
    const answer = act.answer(d, s, fuse, receipt, made?.shown);
    const reviewed = {
      ...(review.holding ? holdFields(ctx, review.holding) : {}),
      ...(review.approval ? approvalFields(review.approval) : {}),
    };
    return {
      writes: { receipt, records: [...listed, ...(made?.records ?? [])] },
      reply: withCharge({ ...answer, body: { ...(answer.body as object), ...reviewed } }, charge),
      summary: () => made?.summary ?? {},
      held,
      cleared: review.approval !== undefined,
    };
  };
  const needs = { fuseId: act.fuseId, hopOf: key?.id, rows: act.rows };
  if (act.review)
    return commitHeldAct(event, ctx, key, act.review.held, act.review.reviewId, needs, { run: (_tx, state, step) => run(state, step) });
  return commitAct(event, ctx, key, { needs, run: (_tx, state) => run(state, undefined) });
}

/** A PAS act's receipt listed under its job: a record written with the group's (ledger/records.ts). */
const jobReceipt = (row: JobReceiptRow): ActRecord => record(PAS_JOB_RECEIPTS, row);

function presentedFingerprint(b: {
  write?: Record<string, unknown> | undefined;
  spend_fingerprint?: string | undefined;
}): string | undefined {
  return b.spend_fingerprint ?? (b.write !== undefined ? spendFingerprint(b.write) : undefined);
}

// ---------------------------------------------------------------- acts

export function bindCheck(event: ActEvent, ctx: AppContext, caller: Caller, bill: Bill, body: { fuse_id: string; job_id: string }) {
  const job = boundJobKey(ownerOf(caller), body.job_id);
  return pasGoverned(event, ctx, caller, bill, {
    kind: 'pas_bind_check',
    fuseId: body.fuse_id,
    jobId: body.job_id,
    rows: [{ reader: BOUND_JOBS, key: job }],
    read: async (state) => (await state.row(BOUND_JOBS, job)) === true,
    decide: (hop, bound) => decideBindCheck(hop, bound),
    data: (d) => ({ job_id: body.job_id, code: d.code }),
    answer: (d, _s, fuse, r) =>
      reply(
        {
          decision: d.decision,
          allow: d.decision === 'ALLOW',
          code: d.code,
          reason: d.reason,
          fuse_id: fuse.id,
          job_id: body.job_id,
          fuse_state: fuse.state,
          demo: !caller.key,
          ...receiptBody(r),
        },
        d.decision === 'ALLOW' ? 200 : 403,
      ),
  });
}

/** What a pre-bind decides on: its licence parent's state and whether its job is bound, read with the group's. */
function licenseAndJob(
  owner: string,
  licenseId: string,
  jobId: string,
): Pick<PasAct<{ parent: LicenseState; bound: boolean }, never>, 'rows' | 'read'> {
  const job = boundJobKey(owner, jobId);
  return {
    rows: [
      { reader: LICENSE_VIEWS, key: licenseKey(owner, licenseId) },
      { reader: BOUND_JOBS, key: job },
    ],
    read: async (state) => ({ parent: await licenseStateOf(state, owner, licenseId), bound: (await state.row(BOUND_JOBS, job)) === true }),
  };
}

interface PreBindA {
  fuse_id: string;
  license_id: string;
  job_id: string;
  write?: Record<string, unknown> | undefined;
  spend_fingerprint?: string | undefined;
  scope: 'bind_only' | 'bind_and_issue';
  review_id?: string | undefined;
}

/** The operation a PAS-A HOLD's review is of (docs/reviews.md): the kind of its receipts. */
const PRE_BIND_A_OPERATION = 'pas_pre_bind_a';

export function preBindA(event: ActEvent, ctx: AppContext, caller: Caller, bill: Bill, body: PreBindA) {
  const owner = ownerOf(caller);
  const fp = presentedFingerprint(body) ?? spendFingerprint({ job_id: body.job_id, demo: true });
  const license = licenseKey(owner, body.license_id);
  // A HOLD of a key is a question for its account's underwriters; an approval is bound to the whole request.
  const request = { fuse_id: body.fuse_id, license_id: body.license_id, job_id: body.job_id, spend_fingerprint: fp, scope: body.scope };
  const held: HeldRequest | undefined = caller.key
    ? heldRequest({ key: caller.key, operation: PRE_BIND_A_OPERATION }, () => fingerprint(request))
    : undefined;
  return pasGoverned(event, ctx, caller, bill, {
    kind: PRE_BIND_A_OPERATION,
    fuseId: body.fuse_id,
    jobId: body.job_id,
    ...licenseAndJob(owner, body.license_id, body.job_id),
    ...(held ? { review: { held, reviewId: body.review_id } } : {}),
    // ARMED is a reading of LIVE; a new ticket turns LIVE into ARMED, so compare on "may issue".
    decide: (hop, s) => decidePreBindA(hop, s.parent === 'ARMED' ? 'LIVE' : s.parent, body.scope, s.bound),
    data: (d, s) => ({
      license_id: body.license_id,
      license_state: s.parent,
      next_step: d.next_step,
      spend_fingerprint: fp,
      ...(d.next_step !== 'bind_only_ticket' ? { code: d.code } : {}),
    }),
    async write(d, _parent, receipt, now, state, review) {
      if (d.next_step === 'none') return { shown: { code: d.code, bind: false, instruction: 'BLOCK: do not bind.' } };
      if (d.next_step === 'manual_underwriting') {
        // One issue per review: the HOLD that opens the review raises it; a retry of the same request answers with both.
        const raised =
          review.holding && !review.opens
            ? (review.holding.summary.issue as { issue_id: string; raised_at: string } | undefined)
            : undefined;
        const issue = {
          id: raised?.issue_id ?? newId('uwi'),
          keyId: owner,
          jobId: body.job_id,
          licenseId: body.license_id,
          fuseId: body.fuse_id,
          reason: d.code,
          receiptId: receipt.receipt_id,
          now,
          reviewId: review.holding?.id ?? null,
        };
        const shown = {
          object: 'manual_underwriting_issue',
          issue_id: issue.id,
          job_id: body.job_id,
          license_id: body.license_id,
          code: d.code,
          reason: d.reason,
          raised_at: raised?.raised_at ?? now,
        };
        return {
          records: caller.key && !raised ? [record(PAS_ISSUES, issue)] : [],
          shown: {
            issue: review.holding ? { ...shown, review_id: review.holding.id, review_url: reviewUrl(ctx, review.holding.id) } : shown,
          },
          summary: {
            fuse_id: body.fuse_id,
            license_id: body.license_id,
            job_id: body.job_id,
            scope: body.scope,
            spend_fingerprint: fp,
            rule: d.code,
            reason: d.reason,
            issue: { issue_id: issue.id, raised_at: now },
          },
        };
      }
      const expires = new Date(Date.parse(now) + ctx.config.TICKET_TTL_SECONDS * 1000).toISOString();
      const ticket = {
        id: caller.key ? newSortableId('bt') : newId('bt_demo'),
        key_id: owner,
        license_id: body.license_id,
        job_id: body.job_id,
        fuse_id: body.fuse_id,
        spend_fingerprint: fp,
        issued_at: now,
        expires_at: expires,
      };
      // Demo tickets are shown, never stored: nobody can redeem them.
      if (caller.key) state.setRow(GROUP_ISSUED_JOBS, license, [...((await state.row(GROUP_ISSUED_JOBS, license)) ?? []), body.job_id]);
      return {
        records: caller.key ? [record(PAS_TICKETS, ticket)] : [],
        shown: {
          ticket: {
            object: 'bind_ticket',
            ticket_id: ticket.id,
            license_id: ticket.license_id,
            job_id: ticket.job_id,
            fuse_id: ticket.fuse_id,
            spend_fingerprint: fp,
            scope: 'bind_only',
            bind_and_issue: false,
            issued_at: now,
            expires_at: expires,
            state: 'issued',
            redeemable: !!caller.key,
          },
        },
      };
    },
    answer: (d, s, fuse, r, made) =>
      reply(
        {
          decision: d.decision,
          next_step: d.next_step,
          reason: d.reason,
          bind_and_issue: false,
          fuse_id: fuse.id,
          fuse_state: fuse.state,
          license_state: s.parent,
          demo: !caller.key,
          ...made,
          ...receiptBody(r),
        },
        PRE_BIND_A_STATUS[d.decision],
      ),
  });
}

export function preBindB(
  event: ActEvent,
  ctx: AppContext,
  caller: Caller,
  bill: Bill,
  body: { fuse_id: string; license_id: string; job_id: string },
) {
  const owner = ownerOf(caller);
  return pasGoverned(event, ctx, caller, bill, {
    kind: 'pas_pre_bind_b',
    fuseId: body.fuse_id,
    jobId: body.job_id,
    ...licenseAndJob(owner, body.license_id, body.job_id),
    decide: (hop, s) => decidePreBindB(hop, s.parent === 'ARMED' ? 'LIVE' : s.parent, s.bound),
    data: (d, s) => ({
      license_id: body.license_id,
      license_state: s.parent,
      result: d.result,
      ...(d.result === 'halt' ? { code: d.code } : {}),
    }),
    answer: (d, s, fuse, r) =>
      reply(
        {
          decision: d.decision,
          result: d.result,
          ...(d.result === 'halt'
            ? { code: d.code, halt: true, call_issue: false, instruction: 'HALT: do not call issue.' }
            : { call_issue: true }),
          reason: d.reason,
          fuse_id: fuse.id,
          license_id: body.license_id,
          license_state: s.parent,
          job_id: body.job_id,
          ...receiptBody(r),
        },
        d.result === 'proceed' ? 200 : 409,
      ),
  });
}

export function authority(event: ActEvent, ctx: AppContext, caller: Caller, bill: Bill, body: z.infer<typeof authorityRequest>) {
  const owner = ownerOf(caller);
  const grantId = body.grant_id;
  let premium: number;
  try {
    premium = usdToMicros(body.premium);
  } catch (e) {
    if (e instanceof MoneyError)
      throw badRequest('invalid_body', `premium: ${e.message}`, { errors: [{ field: 'premium', message: e.message }] });
    throw e;
  }
  const req = { premium_micros: premium, line: body.line, state: body.state };
  return pasGoverned(event, ctx, caller, bill, {
    kind: 'pas_mga_authority',
    fuseId: body.fuse_id,
    jobId: body.job_id,
    rows: [{ reader: GRANTS, key: grantId }],
    read: async (state) => {
      const g = await state.row(GRANTS, grantId);
      // Another key's grant is not the caller's to know of.
      if (!g || g.key_id !== owner || g.revoked_at) throw notFound(`no active authority grant ${grantId}`, 'unknown_grant');
      return g;
    },
    decide: (hop, g) => decideAuthority(hop, g, req),
    data: (d) => ({ grant_id: grantId, failed: d.failed, premium: body.premium, line: body.line, state: body.state }),
    answer: (d, g, fuse, r) =>
      reply(
        {
          decision: d.decision,
          failed: d.failed,
          reason: d.reason,
          fuse_id: fuse.id,
          fuse_state: fuse.state,
          grant_id: grantId,
          limits: { max_premium: formatUsd(g.max_premium_micros), lines: g.lines, states: g.states },
          request: { premium: formatUsd(premium), line: body.line, state: body.state },
          demo: !caller.key,
          ...receiptBody(r),
        },
        d.decision === 'ALLOW' ? 200 : 403,
      ),
  });
}

/** Consumes a bind ticket, exactly once; every refusal is a HALT with its reason. */
export async function redeem(
  event: ActEvent,
  ctx: AppContext,
  key: ApiKey,
  bill: Bill,
  body: z.infer<typeof redeemRequest>,
): Promise<Reply> {
  const presented = presentedFingerprint(body)!;
  const callerNow = new Date(body.now);
  const decide = (s: RedeemView, serverNow: Date): RedeemDecision =>
    decideRedeem({
      ticket: { spend_fingerprint: s.ticket.spend_fingerprint, expires_at: s.ticket.expires_at, redeemed: s.ticket.redeemed_at !== null },
      parent: s.parent,
      jobBound: s.bound,
      presented,
      callerNow,
      serverNow,
      skewSeconds: ctx.config.TICKET_CLOCK_SKEW_SECONDS,
    });
  // Read, decided and consumed under one write lock: a ticket is redeemed once, whatever runs beside it.
  // The group's redeems read their tickets together (one statement), each as the redeems before it left it.
  return commitAct(event, ctx, key, {
    needs: { rows: [{ reader: REDEEM_VIEWS, key: body.ticket_id }] },
    run: async (tx, state) => {
      const serverNow = new Date();
      const s = await state.row(REDEEM_VIEWS, body.ticket_id);
      // Another key's ticket is not the caller's to know of.
      if (!s || s.ticket.key_id !== ownerId(key)) throw notFound(`no bind ticket ${body.ticket_id}`, 'unknown_ticket');
      const d = decide(s, serverNow);
      const decision = d.redeem ? 'ALLOW' : 'HALT';
      const charge = { keyId: key.id, ...chargeOf(bill, decision) };
      const receipt = state.receipt(
        ctx,
        {
          kind: 'pas_bind_ticket_redeem',
          decision,
          subject: s.ticket.id,
          key_id: key.id,
          fingerprint: presented,
          data: {
            license_id: s.ticket.license_id,
            job_id: s.ticket.job_id,
            caller_now: body.now,
            ...(d.redeem ? {} : { reason: d.reason }),
          },
        },
        { charges: [charge] },
      );
      const at = nowIso(serverNow);
      if (d.redeem) {
        if (!(await consumeTicket(tx, s.ticket, receipt.receipt_id, at))) throw stateChangedProblem();
        await addExclusionLeaf(tx, ownerId(key), s.ticket.job_id);
      }
      const common = {
        ticket_id: s.ticket.id,
        license_id: s.ticket.license_id,
        job_id: s.ticket.job_id,
        spend_fingerprint: presented,
        ...receiptBody(receipt),
      };
      const writes = { receipt, records: [jobReceipt({ keyId: ownerId(key), jobId: s.ticket.job_id, receiptId: receipt.receipt_id })] };
      if (d.redeem)
        return {
          writes,
          reply: withCharge(
            reply({
              decision,
              redeemed: true,
              ticket_state: 'consumed',
              reason: 'the ticket was consumed for this write',
              redeemed_at: at,
              ...common,
            }),
            charge,
          ),
        };
      return {
        writes,
        reply: withCharge(
          reply(
            {
              decision,
              halt: true,
              redeemed: false,
              reason: d.reason,
              detail: d.detail,
              instruction: 'HALT: do not forward the write.',
              ...common,
            },
            409,
          ),
          charge,
        ),
      };
    },
  });
}

// ---------------------------------------------------------------- routes

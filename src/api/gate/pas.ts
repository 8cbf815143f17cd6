/**
 * Policy administration (SPEC 2.3, 3, 4.1 /v1/pas/*, /demo/pas/*, 7): licence
 * parents, bind tickets (issued by PAS-A pre-bind, consumed by redeem),
 * exclusion proofs, bind check and appendix, PAS-B pre-bind, delegated
 * authority, and the public demos on drill data.
 *
 * Every decision is a receipt in the receipts log, committed in ONE
 * transaction with its state change, its meter row and its idempotent answer.
 * Decisions are answered with their body, never as problems: ALLOW 200;
 * BLOCK 403; HALT 409; HOLD 409 (a raised manual-underwriting issue).
 */
import { hopLimitProblem } from '../hop-limit.ts';
import type { H3Event } from 'h3';
import { z } from 'zod';
import { exclusionProofJson } from '../../crypto/exclusion.ts';
import { verifierKey } from '../../crypto/note.ts';
import { decideHop, type HopOutcome } from '../../domain/fuse.ts';
import { MoneyError, formatUsd, usdToMicros } from '../../catalog/money.ts';
import {
  CHARGEABLE_LICENSE_STATES,
  HALT_REASONS,
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
import { DRILL_FUSES, DRILL_OWNER, type Fuse } from '../../ledger/fuses.ts';
import { addExclusionLeaf, signedExclusionProof } from '../../ledger/pas-exclusion.ts';
import { consumeTicket, GRANTS, BOUND_JOBS, boundJobKey, GROUP_ISSUED_JOBS, jobReceipts, LICENSE_VIEWS, licenseKey, licenseSnapshot, licenseStateOf, REDEEM_VIEWS, transitionLicense, type JobReceiptRow, type RedeemView, PAS_ISSUES, PAS_JOB_RECEIPTS, PAS_TICKETS } from '../../ledger/pas.ts';
import { type ActRecord, record } from '../../ledger/records.ts';
import { verifyUrl, type Receipt } from '../../ledger/receipts.ts';
import { requireKey } from '../auth.ts';
import { readBody, readQuery } from '../body.ts';
import type { AppContext } from '../context.ts';
import { Problem, badRequest, notFound } from '../problem.ts';
import { enforceDemoRateLimit } from '../rate-limit.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import { reply, toResponse, type Reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { callerOf, fuseIdSchema, UNCHARGED, visibleIn, type Caller } from './governed.ts';
import type { Bill } from '../charges.ts';
import { commitAct, keyedAct } from '../act.ts';
import type { ActState, RowNeed } from '../../ledger/acts.ts';
import { stateChangedProblem } from '../stale-retry.ts';

// ---------------------------------------------------------------- schemas

const identifier = (what: string) =>
  z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, `${what}: 1 to 128 characters of A-Z a-z 0-9 . _ : -`);
export const licenseIdSchema = identifier('a licence id').describe('licence parent id, chosen by the caller (create-free)');
export const jobIdSchema = identifier('a job id').describe('the job (submission, policy or bind job) identifier of the caller');
const fingerprintSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, '64 lowercase hex characters (SHA-256)')
  .describe('SHA-256 (lowercase hex) of the canonical JSON of the write the caller will forward');
const writeSchema = z
  .record(z.string(), z.unknown())
  .describe('the write the caller will forward (a JSON object); its spend fingerprint is SHA-256 of its canonical JSON');
const exactlyOneWrite = (b: { write?: unknown; spend_fingerprint?: unknown }) => (b.write === undefined) !== (b.spend_fingerprint === undefined);
const oneWriteMessage = { message: 'send exactly one of write or spend_fingerprint', path: ['spend_fingerprint'] };

export const preBindARequest = z
  .strictObject({
    fuse_id: fuseIdSchema,
    license_id: licenseIdSchema,
    job_id: jobIdSchema,
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    scope: z.enum(['bind_only', 'bind_and_issue']).default('bind_only').describe('asked scope; bind_and_issue is never granted'),
  })
  .refine(exactlyOneWrite, oneWriteMessage);

export const redeemRequest = z
  .strictObject({
    ticket_id: z.string().regex(/^bt_[A-Za-z0-9_-]{1,64}$/, 'a bind ticket id such as bt_…'),
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    now: z.iso.datetime({ offset: false }).describe("the caller's UTC now (RFC 3339, Z); command radiation: a redeem must present it"),
  })
  .refine(exactlyOneWrite, oneWriteMessage);

export const bindCheckRequest = z.strictObject({ fuse_id: fuseIdSchema, job_id: jobIdSchema });
export const jobQuery = z.object({ job_id: jobIdSchema });
export const preBindBRequest = z.strictObject({ fuse_id: fuseIdSchema, license_id: licenseIdSchema, job_id: jobIdSchema });
const usdAmount = z
  .string()
  .regex(/^\d{1,9}(\.\d{1,6})?$/, 'a decimal USD amount such as "12500.00" (at most 9 digits before the point and 6 after)')
  .describe('premium in USD, a decimal string');
export const authorityRequest = z.strictObject({
  fuse_id: fuseIdSchema,
  grant_id: z.string().regex(/^auth_[A-Za-z0-9_-]{1,64}$/, 'an authority grant id such as auth_…').describe('the grant, created with `pas grants create`'),
  premium: usdAmount,
  line: z.string().regex(/^[a-z0-9_]{1,64}$/, 'a line of business such as "cyber"'),
  state: z.string().regex(/^[A-Z]{2}$/, 'a two-letter state code such as "CA"'),
  job_id: jobIdSchema.optional(),
});
const demoBindCheckRequest = z.strictObject({ fuse_id: fuseIdSchema.default(DRILL_FUSES.live), job_id: jobIdSchema.default('job_demo') });
const demoPreBindARequest = z
  .strictObject({
    fuse_id: fuseIdSchema.default(DRILL_FUSES.live),
    license_id: licenseIdSchema.default('lic_drill_live'),
    job_id: jobIdSchema.default('job_demo'),
    write: writeSchema.optional(),
    spend_fingerprint: fingerprintSchema.optional(),
    scope: z.enum(['bind_only', 'bind_and_issue']).default('bind_only'),
  })
  .refine((b) => !(b.write !== undefined && b.spend_fingerprint !== undefined), oneWriteMessage);
/** Every field has a default (docs/policy-administration.md): `{}` checks a premium within the drill grant. */
const demoAuthorityRequest = authorityRequest.extend({
  fuse_id: fuseIdSchema.default(DRILL_FUSES.live),
  grant_id: z.string().regex(/^auth_[A-Za-z0-9_-]{1,64}$/).default('auth_drill'),
  premium: usdAmount.default('100000.00'),
  line: authorityRequest.shape.line.default('cyber'),
  state: authorityRequest.shape.state.default('CA'),
});

const receiptFields = { receipt_id: z.string(), verify_url: z.url() };
const decisionResponse = z.looseObject({ decision: z.string(), reason: z.string(), ...receiptFields, charge: chargeSchema.nullable().describe('what this decision charged the key: execute_gate for ALLOW, the NAP hold for a refusal; null for a public demo') });
const snapshotResponse = z.looseObject({
  object: z.literal('license'),
  license_id: z.string(),
  state: z.enum(['UNSIGNED', 'LIVE', 'ARMED', 'DEAD']),
  charged: z.boolean(),
  children: z.object({ issued: z.number(), outstanding: z.number(), redeemed: z.number(), expired_unredeemed: z.number(), superseded: z.number() }),
  history: z.array(z.object({ from: z.string(), to: z.string(), at: z.string(), receipt_id: z.string() })),
});
const transitionResponse = z.looseObject({ license_id: z.string(), previous_state: z.string(), state: z.string(), ...receiptFields });
const exclusionResponse = z.looseObject({
  job_id: z.string(),
  present: z.boolean(),
  excluded: z.boolean(),
  proof: z.unknown(),
  checkpoint: z.object({ origin: z.string(), tree_size: z.number(), root_hash: z.string(), note: z.string() }),
  verifier_key: z.string(),
});
const appendixResponse = z.looseObject({ object: z.literal('bind_appendix'), job_id: z.string(), verify_url: z.url(), receipts: z.array(z.unknown()), notice: z.string() });

// ---------------------------------------------------------------- helpers

/** What a PAS decision is charged: ALLOW is one governed act; every refusal (BLOCK, HOLD, HALT) is the NAP `hold`. */
const chargeOf = (bill: Bill, decision: string) => bill(decision === 'ALLOW' ? 'execute_gate' : 'hold');

/** The answer with the charge it made (the very line the act writes): null for a public demo. */
function withCharge(r: Reply, charge: Parameters<typeof chargeView>[0] | undefined): Reply {
  return { ...r, body: { ...(r.body as object), charge: charge ? chargeView(charge) : null } };
}

const ownerOf = (c: Caller) => (c.key ? ownerId(c.key) : DRILL_OWNER);
const receiptBody = (r: Receipt) => ({ receipt_id: r.receipt_id, verify_url: r.verify_url });


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
  write?: (d: D, s: S, receipt: Receipt, now: string, state: ActState) => Promise<Made>;
  answer: (d: D, s: S, fuse: Fuse, receipt: Receipt, made: Made['shown'] | undefined) => Reply;
}

interface Made {
  records?: ActRecord[];
  shown: Record<string, unknown>;
}

/**
 * A PAS decision that hops first, as an act of the pipeline (api/act.ts): under
 * the write lock, with the acts queued beside it, the fuse and the area state
 * are read, the decision made (pure), the hop counted and charged, and the
 * receipt and the area's writes recorded. No state is read before the lock, so
 * nothing is decided twice.
 */
async function pasGoverned<S, D extends { decision: string }>(event: H3Event, ctx: AppContext, caller: Caller, bill: Bill, act: PasAct<S, D>): Promise<Reply> {
  const key = caller.key;
  if (key && key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  return commitAct(event, ctx, key, {
    needs: { fuseId: act.fuseId, hopOf: key?.id, rows: act.rows },
    run: async (_tx, state) => {
      const now = nowIso();
      const fuse = visibleIn(caller, act.fuseId, state.fuse);
      const s = await act.read(state);
      const d = act.decide(decideHop(fuse.state, undefined, caller.surface), s);
      // The one line the receipt states and the answer shows.
      const charge = key ? { keyId: key.id, ...chargeOf(bill, d.decision) } : undefined;
      const receipt = state.receipt(
        ctx,
        {
          kind: act.kind,
          decision: d.decision,
          subject: act.jobId ?? fuse.id,
          ...(key ? { key_id: key.id } : { demo: true }),
          data: { fuse_id: fuse.id, fuse_state: fuse.state, ...act.data(d, s) },
        },
        { charges: charge ? [charge] : [] },
      );
      const made = await act.write?.(d, s, receipt, now, state);
      const listed = key && act.jobId ? [jobReceipt({ keyId: ownerId(key), jobId: act.jobId, receiptId: receipt.receipt_id })] : [];
      return { writes: { receipt, records: [...listed, ...(made?.records ?? [])] }, reply: withCharge(act.answer(d, s, fuse, receipt, made?.shown), charge) };
    },
  });
}

/** A PAS act's receipt listed under its job: a record written with the group's (ledger/records.ts). */
const jobReceipt = (row: JobReceiptRow): ActRecord => record(PAS_JOB_RECEIPTS, row);

function presentedFingerprint(b: { write?: Record<string, unknown> | undefined; spend_fingerprint?: string | undefined }): string | undefined {
  return b.spend_fingerprint ?? (b.write !== undefined ? spendFingerprint(b.write) : undefined);
}

// ---------------------------------------------------------------- acts

function bindCheck(event: H3Event, ctx: AppContext, caller: Caller, bill: Bill, body: { fuse_id: string; job_id: string }) {
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
      reply({ decision: d.decision, allow: d.decision === 'ALLOW', code: d.code, reason: d.reason, fuse_id: fuse.id, job_id: body.job_id, fuse_state: fuse.state, demo: !caller.key, ...receiptBody(r) }, d.decision === 'ALLOW' ? 200 : 403),
  });
}

/** What a pre-bind decides on: its licence parent's state and whether its job is bound, read with the group's. */
function licenseAndJob(owner: string, licenseId: string, jobId: string): Pick<PasAct<{ parent: LicenseState; bound: boolean }, never>, 'rows' | 'read'> {
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
}

function preBindA(event: H3Event, ctx: AppContext, caller: Caller, bill: Bill, body: PreBindA) {
  const owner = ownerOf(caller);
  const fp = presentedFingerprint(body) ?? spendFingerprint({ job_id: body.job_id, demo: true });
  const license = licenseKey(owner, body.license_id);
  return pasGoverned(event, ctx, caller, bill, {
    kind: 'pas_pre_bind_a',
    fuseId: body.fuse_id,
    jobId: body.job_id,
    ...licenseAndJob(owner, body.license_id, body.job_id),
    // ARMED is a reading of LIVE; a new ticket turns LIVE into ARMED, so compare on "may issue".
    decide: (hop, s) => decidePreBindA(hop, s.parent === 'ARMED' ? 'LIVE' : s.parent, body.scope, s.bound),
    data: (d, s) => ({ license_id: body.license_id, license_state: s.parent, next_step: d.next_step, spend_fingerprint: fp, ...(d.next_step !== 'bind_only_ticket' ? { code: d.code } : {}) }),
    async write(d, _parent, receipt, now, state) {
      if (d.next_step === 'none') return { shown: { code: d.code, bind: false, instruction: 'BLOCK: do not bind.' } };
      if (d.next_step === 'manual_underwriting') {
        const id = newId('uwi');
        const issue = { id, keyId: owner, jobId: body.job_id, licenseId: body.license_id, fuseId: body.fuse_id, reason: d.code, receiptId: receipt.receipt_id, now };
        return {
          records: caller.key ? [record(PAS_ISSUES, issue)] : [],
          shown: { issue: { object: 'manual_underwriting_issue', issue_id: id, job_id: body.job_id, license_id: body.license_id, code: d.code, reason: d.reason, raised_at: now } },
        };
      }
      const expires = new Date(Date.parse(now) + ctx.config.TICKET_TTL_SECONDS * 1000).toISOString();
      const ticket = { id: caller.key ? newSortableId('bt') : newId('bt_demo'), key_id: owner, license_id: body.license_id, job_id: body.job_id, fuse_id: body.fuse_id, spend_fingerprint: fp, issued_at: now, expires_at: expires };
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
        { decision: d.decision, next_step: d.next_step, reason: d.reason, bind_and_issue: false, fuse_id: fuse.id, fuse_state: fuse.state, license_state: s.parent, demo: !caller.key, ...made, ...receiptBody(r) },
        PRE_BIND_A_STATUS[d.decision],
      ),
  });
}

function preBindB(event: H3Event, ctx: AppContext, caller: Caller, bill: Bill, body: { fuse_id: string; license_id: string; job_id: string }) {
  const owner = ownerOf(caller);
  return pasGoverned(event, ctx, caller, bill, {
    kind: 'pas_pre_bind_b',
    fuseId: body.fuse_id,
    jobId: body.job_id,
    ...licenseAndJob(owner, body.license_id, body.job_id),
    decide: (hop, s) => decidePreBindB(hop, s.parent === 'ARMED' ? 'LIVE' : s.parent, s.bound),
    data: (d, s) => ({ license_id: body.license_id, license_state: s.parent, result: d.result, ...(d.result === 'halt' ? { code: d.code } : {}) }),
    answer: (d, s, fuse, r) =>
      reply(
        {
          decision: d.decision,
          result: d.result,
          ...(d.result === 'halt' ? { code: d.code, halt: true, call_issue: false, instruction: 'HALT: do not call issue.' } : { call_issue: true }),
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

function authority(event: H3Event, ctx: AppContext, caller: Caller, bill: Bill, body: z.infer<typeof authorityRequest>) {
  const owner = ownerOf(caller);
  const grantId = body.grant_id;
  let premium: number;
  try {
    premium = usdToMicros(body.premium);
  } catch (e) {
    if (e instanceof MoneyError) throw badRequest('invalid_body', `premium: ${e.message}`, { errors: [{ field: 'premium', message: e.message }] });
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
async function redeem(event: H3Event, ctx: AppContext, key: ApiKey, bill: Bill, body: z.infer<typeof redeemRequest>): Promise<Reply> {
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
          data: { license_id: s.ticket.license_id, job_id: s.ticket.job_id, caller_now: body.now, ...(d.redeem ? {} : { reason: d.reason }) },
        },
        { charges: [charge] },
      );
      const at = nowIso(serverNow);
      if (d.redeem) {
        if (!(await consumeTicket(tx, s.ticket, receipt.receipt_id, at))) throw stateChangedProblem();
        await addExclusionLeaf(tx, ownerId(key), s.ticket.job_id);
      }
      const common = { ticket_id: s.ticket.id, license_id: s.ticket.license_id, job_id: s.ticket.job_id, spend_fingerprint: presented, ...receiptBody(receipt) };
      const writes = { receipt, records: [jobReceipt({ keyId: ownerId(key), jobId: s.ticket.job_id, receiptId: receipt.receipt_id })] };
      if (d.redeem) return { writes, reply: withCharge(reply({ decision, redeemed: true, ticket_state: 'consumed', reason: 'the ticket was consumed for this write', redeemed_at: at, ...common }), charge) };
      return { writes, reply: withCharge(reply({ decision, halt: true, redeemed: false, reason: d.reason, detail: d.detail, instruction: 'HALT: do not forward the write.', ...common }, 409), charge) };
    },
  });
}

// ---------------------------------------------------------------- routes

export function registerPasRoutes(router: Router, ctx: AppContext): void {
  const limit = ctx.config.MAX_BODY_BYTES;
  const publicCaller = async (event: H3Event) => {
    await enforceDemoRateLimit(event, ctx);
    return callerOf(undefined);
  };
  const licenseParam = (event: H3Event) => {
    const id = licenseIdSchema.safeParse(event.context.params?.license_id);
    if (!id.success) throw badRequest('invalid_path', `license_id: ${id.error.issues[0]!.message}`, { errors: [{ field: 'license_id', message: id.error.issues[0]!.message }] });
    return id.data;
  };

  router.get(
    '/v1/pas/licenses/:license_id',
    async (event) => {
      const key = await requireKey(event, ctx);
      return toResponse(reply(await licenseSnapshot(ctx.ledger.read, ownerId(key), licenseParam(event), nowIso())));
    },
    { tool: 'pas_license', summary: 'Licence parent snapshot: UNSIGNED until charge, ARMED when LIVE with unredeemed children; children counts and state history', auth: 'key', tag: 'pas', response: snapshotResponse },
  );

  const transition = (verb: 'charge' | 'dead', to: 'LIVE' | 'DEAD', from: readonly LicenseState[]) =>
    keyedAct(
      router,
      ctx,
      `/v1/pas/licenses/:license_id/${verb}`,
      {
        ...(verb === 'charge'
          ? { tool: 'pas_license_charge', summary: 'Charge-only resurrection: UNSIGNED or DEAD to LIVE (no bind-only write is made); 409 when already LIVE', role: 'operator' as const, tag: 'pas', response: transitionResponse, problems: [403, 409, 422] }
          : { tool: 'pas_license_blow', summary: 'Blow the licence parent (stored and reported as DEAD); outstanding tickets cannot redeem until a charge', tag: 'pas', response: transitionResponse, problems: [422] }),
        // A malformed licence id is refused before the Idempotency-Key.
        precheck: (event) => licenseParam(event),
      },
      async (_body, key, event, licenseId) =>
        commitAct(event, ctx, key, {
          run: async (tx, act) => {
            const receipt = act.receipt(ctx, { kind: `pas_license_${verb}`, decision: to, subject: licenseId, key_id: key.id });
            const now = nowIso();
            const previous = await transitionLicense(tx, { keyId: ownerId(key), licenseId, from, to, receiptId: receipt.receipt_id, now });
            if (previous === null) {
              throw new Problem({
                status: 409,
                code: 'invalid_transition',
                title: 'Conflict',
                detail: `licence ${licenseId} is already LIVE: charge resurrects only an UNSIGNED or DEAD parent`,
                extra: { license_id: licenseId, state: await licenseStateOf(act, ownerId(key), licenseId) },
              });
            }
            const state = await licenseStateOf(act, ownerId(key), licenseId);
            return { writes: { receipt }, reply: reply({ object: 'license_transition', license_id: licenseId, action: verb, previous_state: previous, state, at: now, ...receiptBody(receipt) }) };
          },
        }),
    );
  transition('charge', 'LIVE', CHARGEABLE_LICENSE_STATES);
  transition('dead', 'DEAD', ['UNSIGNED', 'LIVE', 'ARMED', 'DEAD']);

  keyedAct(
    router,
    ctx,
    '/v1/pas/pas-a/pre-bind',
    {
      tool: 'pas_a_pre_bind', summary: 'PAS-A pre-bind: hop, then a bind-only ticket (200), a raised manual-underwriting issue (HOLD 409) or BLOCK (403) for a job already bound; bind-and-issue is never granted',
      tag: 'pas',
      body: preBindARequest,
      response: decisionResponse, responses: { 200: { description: 'A bind-only ticket', schema: decisionResponse }, 409: { description: 'HOLD: a manual-underwriting issue was raised; no ticket, do not bind', schema: decisionResponse }, 403: { description: 'BLOCK: the job is already bound; no ticket, do not bind', schema: decisionResponse } },
      problems: [402, 404, 409, 422],
      charges: ['execute_gate', 'hold'],
      lane: true,
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', license_id: 'lic_acme_2026', job_id: 'job_1042', write: { op: 'bind', policy: 'P-1042', premium: '12500.00' } },
    },
    (b, key, event, _, bill) => preBindA(event, ctx, callerOf(key), bill, b),
  );

  keyedAct(
    router,
    ctx,
    '/v1/pas/bind-ticket/redeem',
    {
      tool: 'pas_ticket_redeem', summary: `Consume a single-use bind ticket for the write it is bound to; HALT (409) with reason ${HALT_REASONS.join(', ')}`,
      tag: 'pas',
      body: redeemRequest,
      response: decisionResponse, responses: { 409: { description: 'HALT: the ticket was not consumed; do not forward the write', schema: decisionResponse } },
      problems: [404, 409, 422],
      charges: ['execute_gate', 'hold'],
      lane: true,
      example: { ticket_id: 'bt_9Wm3Qx7LzT2vN8kR4sPc5D', write: { op: 'bind', policy: 'P-1042', premium: '12500.00' }, now: '2026-11-22T10:00:00Z' },
    },
    (b, key, event, _, bill) => redeem(event, ctx, key, bill, b),
  );

  router.get(
    '/v1/pas/exclusion',
    async (event) => {
      const key = await requireKey(event, ctx);
      const { job_id } = readQuery(event, jobQuery);
      const p = await signedExclusionProof(ctx, ownerId(key), job_id);
      const head = { origin: p.origin, tree_size: p.head.size, root_hash: Buffer.from(p.head.root).toString('base64'), note: p.note };
      return toResponse(
        reply({
          ...exclusionProofJson(job_id, p.proof, head),
          verifier_key: verifierKey(p.origin, ctx.keyring.current.raw),
          public_key_url: `${ctx.config.BASE_URL}/crypto/public-key`,
        }),
      );
    },
    { tool: 'pas_exclusion', summary: 'Exclusion proof (our extension): the job has no redeemed spend leaf, or has one, by a sparse Merkle path (bitmap and non-empty siblings) against a signed tree head', auth: 'key', tag: 'pas', query: jobQuery, response: exclusionResponse },
  );

  keyedAct(
    router,
    ctx,
    '/v1/pas/bind-check',
    { tool: 'pas_bind_check', summary: 'Bind check: ALLOW (200) or BLOCK (403) with a receipt; fuse_id and job identifiers only', tag: 'pas', body: bindCheckRequest, response: decisionResponse, responses: { 403: { description: 'BLOCK: do not bind', schema: decisionResponse } }, problems: [402, 404, 422], charges: ['execute_gate', 'hold'], lane: true, example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', job_id: 'job_1042' } },
    (b, key, event, _, bill) => bindCheck(event, ctx, callerOf(key), bill, b),
  );

  router.get(
    '/v1/pas/bind-appendix',
    async (event) => {
      const key = await requireKey(event, ctx);
      const { job_id } = readQuery(event, jobQuery);
      const rows = await jobReceipts(ctx.ledger.read, ownerId(key), job_id);
      if (rows.length === 0) throw notFound(`no receipts for job ${job_id}`, 'unknown_job');
      const receipts = rows.map((r) => ({ ...r, verify_url: verifyUrl(ctx, r.receipt_id) }));
      return toResponse(
        reply({
          object: 'bind_appendix',
          job_id,
          verify_url: receipts.at(-1)!.verify_url,
          receipts,
          exclusion_url: `${ctx.config.BASE_URL}/v1/pas/exclusion?job_id=${encodeURIComponent(job_id)}`,
          notice: 'On-request examiner appendix. It is not the regulatory filing.',
          generated_at: nowIso(),
        }),
      );
    },
    { tool: 'pas_bind_appendix', summary: 'On-request examiner appendix: job_id, verify_url and the receipts of the job; not the regulatory filing', auth: 'key', tag: 'pas', query: jobQuery, response: appendixResponse, problems: [404] },
  );

  keyedAct(
    router,
    ctx,
    '/v1/pas/pas-b/pre-bind',
    { tool: 'pas_b_pre_bind', summary: 'PAS-B pre-bind, the issue wrap: proceed (200) or halt (409; the caller must not call issue)', tag: 'pas', body: preBindBRequest, response: decisionResponse, responses: { 409: { description: 'halt: do not call issue', schema: decisionResponse } }, problems: [402, 404, 422], charges: ['execute_gate', 'hold'], lane: true, example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', license_id: 'lic_acme_2026', job_id: 'job_1042' } },
    (b, key, event, _, bill) => preBindB(event, ctx, callerOf(key), bill, b),
  );

  keyedAct(
    router,
    ctx,
    '/v1/pas/mga-authority',
    {
      tool: 'pas_mga_authority', summary: 'Delegated-authority check: hop plus the premium, line and state limits of a grant; ALLOW (200) or BLOCK (403) naming the failed limits',
      tag: 'pas',
      body: authorityRequest,
      response: decisionResponse, responses: { 403: { description: 'BLOCK naming the failed limits', schema: decisionResponse } },
      problems: [402, 404, 422],
      charges: ['execute_gate', 'hold'],
      lane: true,
      example: { fuse_id: 'fuse_7Jm2kQv9XrT4pLw8Ns3bYd', grant_id: 'auth_4Lq9Xz2BvN7tKp3WmR8sYd', premium: '12500.00', line: 'cyber', state: 'CA' },
    },
    (b, key, event, _, bill) => authority(event, ctx, callerOf(key), bill, b),
  );

  // Public demos on drill data (fuse_drill_live/dead, lic_drill_live/dead, auth_drill): never charged, rate limited.
  router.post(
    '/demo/pas/bind-check',
    async (event) => {
      const caller = await publicCaller(event);
      return toResponse(await bindCheck(event, ctx, caller, UNCHARGED, await readBody(event, demoBindCheckRequest, limit)));
    },
    { tool: 'demo_pas_bind_check', summary: 'Public bind ALLOW/BLOCK demo on the drill fuses', auth: 'demo', tag: 'pas', body: demoBindCheckRequest, response: decisionResponse, responses: { 403: { description: 'BLOCK: do not bind', schema: decisionResponse } }, problems: [404, 429], example: { fuse_id: DRILL_FUSES.dead, job_id: 'job_demo' } },
  );
  router.post(
    '/demo/pas/mga-authority',
    async (event) => {
      const caller = await publicCaller(event);
      return toResponse(await authority(event, ctx, caller, UNCHARGED, await readBody(event, demoAuthorityRequest, limit)));
    },
    { tool: 'demo_pas_mga_authority', summary: 'Public delegated-authority check on the drill grant (auth_drill)', auth: 'demo', tag: 'pas', body: demoAuthorityRequest, response: decisionResponse, responses: { 403: { description: 'BLOCK naming the failed limits', schema: decisionResponse } }, problems: [404, 429], example: { premium: '300000.00', line: 'cyber', state: 'CA' } },
  );
  router.post(
    '/demo/pas/pas-a/pre-bind',
    async (event) => {
      const caller = await publicCaller(event);
      return toResponse(await preBindA(event, ctx, caller, UNCHARGED, await readBody(event, demoPreBindARequest, limit)));
    },
    { tool: 'demo_pas_a_pre_bind', summary: 'Public pre-bind weld on drill data: a demo ticket (never redeemable) or a manual-underwriting issue', auth: 'demo', tag: 'pas', body: demoPreBindARequest, response: decisionResponse, responses: { 200: { description: 'A bind-only ticket', schema: decisionResponse }, 409: { description: 'HOLD: a manual-underwriting issue was raised; no ticket, do not bind', schema: decisionResponse }, 403: { description: 'BLOCK: the job is already bound; no ticket, do not bind', schema: decisionResponse } }, problems: [404, 429], example: { license_id: 'lic_drill_dead', job_id: 'job_demo' } },
  );
}

/**
 * The governed hop: the one place where a fuse is checked before an act.
 * Used by POST /v1/fuse/hop, /v1/act, the public demos and every later area
 * that "hops first".
 *
 * Order: read the fuse, decide (pure rule), make the receipt (batch-sealed: no
 * signature of its own), then in ONE transaction: re-check the fuse state, count the hop
 * against the key's limit, write the meter rows and the receipt (and the
 * idempotent answer). A fuse that changed in between is decided again.
 */
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event } from 'h3';
import { z } from 'zod';
import { SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import { tollMicros } from '../../catalog/tolls.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { decideHop, type HopOutcome } from '../../domain/fuse.ts';
import { skuFor, type Sku } from '../../domain/pricing.ts';
import { consumeHop, type ApiKey } from '../../ledger/api-keys.ts';
import { DRILL_OWNER, getFuse, type Fuse } from '../../ledger/fuses.ts';
import { recordCharge } from '../../ledger/meter.ts';
import { recordReceipt, sealedReceipt, type Receipt } from '../../ledger/receipts.ts';
import type { AppContext } from '../context.ts';
import { commitReply } from '../idempotency.ts';
import { Problem, notFound } from '../problem.ts';
import { reply, type Reply } from '../reply.ts';
import { withPayment, type PaidAct, type SettledAct } from '../../payments/x402/paid-act.ts';
import { retryIfStale, StateChanged } from '../stale-retry.ts';

export const fuseIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a fuse id such as fuse_…');
export const actionSchema = z.looseObject({
  kind: z.string().regex(/^[a-z0-9_]{1,64}$/, 'an act kind such as "pay" (lowercase letters, digits, _)'),
});
export type Action = z.infer<typeof actionSchema>;

/** Every preset's act kinds: the default declared surface of a key. */
export const DEFAULT_SURFACE: readonly string[] = [...new Set(Object.values(SURFACE_PRESETS).flat())];

/** Who is hopping: a key, or the public (drill fuses only, never charged). */
export interface Caller {
  key?: ApiKey;
  surface: readonly string[];
  /** Paying this hop with x402 instead of the key's hop quota (docs/x402.md); keyless payers see drill fuses only. */
  paid?: PaidAct | undefined;
}

export function callerOf(key: ApiKey | undefined): Caller {
  return key ? { key, surface: key.surface ?? DEFAULT_SURFACE } : { surface: DEFAULT_SURFACE };
}

const owner = (c: Caller) => c.key?.id ?? DRILL_OWNER;

/** The fuse if the caller may see it: its own fuses, or the drill fuses for the public. Else 404. */
export async function visibleFuse(db: Parameters<typeof getFuse>[0], caller: Caller, id: string): Promise<Fuse> {
  const fuse = await getFuse(db, id);
  // Another key's fuse is answered exactly like a missing one: 404, not 403.
  if (!fuse || fuse.key_id !== owner(caller)) throw notFound(`no fuse ${id}`, 'unknown_fuse');
  return fuse;
}

export function hopLimitProblem(key: Pick<ApiKey, 'id' | 'hop_limit' | 'hops_used'>): Problem {
  return new Problem({
    status: 402,
    code: 'hop_limit_exceeded',
    title: 'Payment required',
    detail: `key ${key.id} has used its ${key.hop_limit} hops; x402 payments are not configured on this service`,
    extra: {
      hop_limit: key.hop_limit,
      hops_used: key.hops_used,
      x402Version: 1,
      x402_configured: false,
      accepts: [],
      error: 'hop limit exceeded',
      how_to_raise: `an operator raises it with: npm run cli -- keys set-limit ${key.id} --hop-limit <N>`,
    },
  });
}

export interface GovernedHop {
  kind: 'hop' | 'act';
  fuseId: string;
  action?: Action | undefined;
}

export interface HopResult {
  fuse: Fuse;
  outcome: HopOutcome;
  receipt: Receipt;
  fingerprint?: string | undefined;
}

/** Charges of a governed hop: a permitted act pays the hop and the seal; a refusal pays NAP `hold`. */
function chargesOf(kind: GovernedHop['kind'], outcome: HopOutcome): Sku[] {
  const hop = skuFor(outcome.decision, 'execute_gate');
  if (kind === 'act' && outcome.verdict) return [hop, { sku: 'seal', nap: false, amountMicros: tollMicros('seal') }];
  return [hop];
}

/**
 * Performs a governed hop and commits it; `answer` builds the reply body from
 * the result. Extra writes of the caller's area can be added with `also`.
 */
export async function governedHop(
  event: H3Event,
  ctx: AppContext,
  caller: Caller,
  req: GovernedHop,
  answer: (r: HopResult) => Reply,
  also?: (tx: Transaction, r: HopResult) => Promise<void>,
): Promise<Reply> {
  if (caller.key && !caller.paid && caller.key.hops_used >= caller.key.hop_limit) throw hopLimitProblem(caller.key);
  // Settled once, on the first decision; a retry after a fuse change re-decides with the same payment.
  let settled: SettledAct | undefined;
  for (let attempt = 0; ; attempt++) {
    const fuse = await visibleFuse(ctx.ledger.read, caller, req.fuseId);
    const outcome = decideHop(fuse.state, req.action?.kind, caller.surface);
    const fp = req.action ? fingerprint(req.action) : undefined;
    const act = {
      kind: req.kind,
      decision: outcome.decision,
      subject: fuse.id,
      ...(caller.key ? { key_id: caller.key.id } : caller.paid ? {} : { demo: true }),
      ...(fp ? { fingerprint: fp } : {}),
      data: { state: fuse.state, ok: outcome.ok, verdict: outcome.verdict, reason: outcome.reason, ...(req.action ? { act_kind: req.action.kind } : {}) },
    };
    settled ??= caller.paid ? await caller.paid.settle(act) : undefined;
    // Batch-sealed: the batch that commits this receipt signs one checkpoint for all of it.
    const receipt = sealedReceipt(ctx, settled ? withPayment(act, settled) : act);
    const result: HopResult = { fuse, outcome, receipt, fingerprint: fp };
    try {
      return await commitReply(event, ctx, async (tx) => {
        const now = await getFuse(tx, fuse.id);
        if (now?.state !== fuse.state) throw new StateChanged();
        if (caller.key && !settled) {
          if (!(await consumeHop(tx, caller.key.id))) throw hopLimitProblem({ ...caller.key, hops_used: caller.key.hop_limit });
          for (const c of chargesOf(req.kind, outcome)) {
            await recordCharge(tx, { keyId: caller.key.id, sku: c.sku, amountMicros: c.amountMicros, nap: c.nap, ref: receipt.receipt_id });
          }
        }
        await recordReceipt(tx, receipt);
        if (settled) await settled.commit(tx, receipt.receipt_id);
        if (also) await also(tx, result);
        const out = answer(result);
        return settled ? { ...out, body: { ...(out.body as object), payment: settled.facts }, headers: { ...out.headers, ...settled.headers } } : out;
      });
    } catch (e) {
      if (retryIfStale(e, attempt)) continue;
      throw e;
    }
  }
}

export const hopResponse = z.object({
  fuse_id: z.string(),
  ok: z.boolean().describe('the fuse lets the agent act at all (LIVE or ARMED)'),
  receipt_id: z.string(),
  state: z.enum(['LIVE', 'ARMED', 'DEAD', 'UNSIGNED']),
  verdict: z.boolean().describe('this action may go ahead now'),
  verify_url: z.url(),
  decision: z.enum(['PERMIT', 'BLOCK', 'DENY', 'SILENCE']),
  reason: z.string(),
});

/** The hop response of SPEC 2.1: every field always present, plus the decision and its reason. */
export function hopBody(r: HopResult): Record<string, unknown> {
  return {
    fuse_id: r.fuse.id,
    ok: r.outcome.ok,
    receipt_id: r.receipt.receipt_id,
    state: r.fuse.state,
    verdict: r.outcome.verdict,
    verify_url: r.receipt.verify_url,
    decision: r.outcome.decision,
    reason: r.outcome.reason,
  };
}

export const hopReply = (r: HopResult): Reply => reply(hopBody(r));

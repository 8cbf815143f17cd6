/**
 * The governed hop: the one place where a fuse is checked before an act.
 * Used by POST /v1/fuse/hop, /v1/act, the public demos and every later area
 * that "hops first".
 *
 * A hop is an act of the pipeline (api/act.ts): under the write lock, with the
 * hops queued beside it, the fuse is read, the hop decided (pure rule,
 * domain/fuse.ts) and counted against the key's limit, and its batch-sealed
 * receipt (stating its charges) and idempotent answer are written.
 */
import type { H3Event } from 'h3';
import { z } from 'zod';
import { SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import { tollMicros } from '../../catalog/tolls.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { decideHop, type HopOutcome } from '../../domain/fuse.ts';
import { skuFor } from '../../domain/pricing.ts';
import type { ActCharge, ActState } from '../../ledger/acts.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { DRILL_OWNER, getFuse, type Fuse } from '../../ledger/fuses.ts';
import type { Receipt, ReceiptInput } from '../../ledger/receipts.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { hopLimitProblem } from '../hop-limit.ts';
import { notFound } from '../problem.ts';
import { reply, type Reply } from '../reply.ts';
import { withPayment, type PaidAct, type SettledAct } from '../../payments/x402/paid-act.ts';
import { retryIfStale, StateChanged } from '../stale-retry.ts';
import { hopDeniedAlert } from './alert-events.ts';
import { nudgeDeliverer } from '../site/webhooks.ts';

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

const owner = (c: Caller) => (c.key ? ownerId(c.key) : DRILL_OWNER);

/** The fuse if the caller may see it: its own fuses, or the drill fuses for the public. Else 404. */
export async function visibleFuse(db: Parameters<typeof getFuse>[0], caller: Caller, id: string): Promise<Fuse> {
  return visibleIn(caller, id, await getFuse(db, id));
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
  /** What the act charges the key (the very lines it writes); empty for a demo or an x402-paid hop. */
  charges: readonly ActCharge[];
}

/** Charges of a governed hop: a permitted act pays the hop and the seal; a refusal pays NAP `hold`. */
function chargesOf(kind: GovernedHop['kind'], outcome: HopOutcome, keyId: string): ActCharge[] {
  const hop = { keyId, ...skuFor(outcome.decision, 'execute_gate') };
  if (kind === 'act' && outcome.verdict) return [hop, { keyId, sku: 'seal', nap: false, amountMicros: tollMicros('seal') }];
  return [hop];
}

/** The receipt input of a hop decided on `fuse`. */
function hopAct(caller: Caller, req: GovernedHop, fuse: Fuse, outcome: HopOutcome, fp: string | undefined): ReceiptInput {
  return {
    kind: req.kind,
    decision: outcome.decision,
    subject: fuse.id,
    ...(caller.key ? { key_id: caller.key.id } : caller.paid ? {} : { demo: true }),
    ...(fp ? { fingerprint: fp } : {}),
    data: { state: fuse.state, ok: outcome.ok, verdict: outcome.verdict, reason: outcome.reason, ...(req.action ? { act_kind: req.action.kind } : {}) },
  };
}

/** `fuse` if the caller may see it (its own, or a drill fuse for the public); else 404. */
export const visibleIn = (caller: Caller, id: string, fuse: Fuse | undefined): Fuse => {
  // Another key's fuse is answered exactly like a missing one: 404, not 403.
  if (!fuse || fuse.key_id !== owner(caller)) throw notFound(`no fuse ${id}`, 'unknown_fuse');
  return fuse;
};

/**
 * Performs a governed hop: the fuse is read and the hop decided under the write
 * lock, together with the hops queued beside it (api/act.ts); `answer` builds
 * the reply body from the result.
 *
 * A hop paid with x402 settles its payment on a decision made before the lock
 * (settling is a network call); under the lock the fuse must still be in the
 * state that decision saw, or the hop is decided again with the same payment.
 */
export async function governedHop(event: H3Event, ctx: AppContext, caller: Caller, req: GovernedHop, answer: (r: HopResult) => Reply): Promise<Reply> {
  const key = caller.key;
  if (key && !caller.paid && key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  const fp = req.action ? fingerprint(req.action) : undefined;
  let settled: SettledAct | undefined;
  // A refused hop queued alert deliveries: wake the deliverer once it committed.
  let queued = false;
  const alerted = (r: Reply) => {
    if (queued) nudgeDeliverer();
    return r;
  };
  for (let attempt = 0; ; attempt++) {
    let seen: Fuse['state'] | undefined;
    if (caller.paid) {
      const fuse = await visibleFuse(ctx.ledger.read, caller, req.fuseId);
      seen = fuse.state;
      settled ??= await caller.paid.settle(hopAct(caller, req, fuse, decideHop(fuse.state, req.action?.kind, caller.surface), fp));
    }
    const paid = settled;
    const decideOn = (state: ActState) => {
      const fuse = visibleIn(caller, req.fuseId, state.fuse);
      if (seen && fuse.state !== seen) throw new StateChanged();
      const outcome = decideHop(fuse.state, req.action?.kind, caller.surface);
      const act = hopAct(caller, req, fuse, outcome, fp);
      // Batch-sealed: the batch that commits this receipt signs one checkpoint for all of it.
      const charges = key && !paid ? chargesOf(req.kind, outcome, key.id) : [];
      const receipt = state.receipt(ctx, paid ? withPayment(act, paid) : act, { charges });
      // A refused hop of a key alerts its account's subscribers (docs/alerts.md); the public drills alert nobody.
      const records = key && !outcome.verdict ? [hopDeniedAlert(ownerId(key), key.id, fuse, outcome, receipt, req.action?.kind)] : [];
      queued = records.length > 0;
      return { outcome, receipt, records, out: answer({ fuse, outcome, receipt, fingerprint: fp, charges }) };
    };
    const needs = { fuseId: req.fuseId, hopOf: key && !paid ? key.id : undefined };
    try {
      if (!paid) {
        return alerted(await commitAct(event, ctx, key, {
          needs,
          decide(state) {
            const { receipt, records, out } = decideOn(state);
            return { writes: { receipt, records }, reply: out };
          },
        }));
      }
      return alerted(await commitAct(event, ctx, key, {
        needs,
        run: async (tx, state) => {
          const { receipt, records, out } = decideOn(state);
          await paid.commit(tx, receipt.receipt_id);
          return { writes: { receipt, records }, reply: { ...out, body: { ...(out.body as object), payment: paid.facts }, headers: { ...out.headers, ...paid.headers } } };
        },
      }));
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
  charge: chargeSchema.nullable().describe('what this hop charged the key: execute_gate, or the NAP hold for a refusal; null for a public demo or an x402-paid hop'),
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
    charge: r.charges[0] ? chargeView(r.charges[0]) : null,
  };
}

export const hopReply = (r: HopResult): Reply => reply(hopBody(r));

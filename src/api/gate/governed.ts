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
import type { ActEvent } from '../act-event.ts';
import { z } from 'zod';
import { ACT_KINDS_TEXT, actKindSchema, DEFAULT_ACT_KINDS } from '../../catalog/surfaces.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { decideHop, type HopOutcome } from '../../domain/fuse.ts';
import { isRefusal } from '../../domain/pricing.ts';
import { TOOL_NAME, TOOL_NAME_MESSAGE } from '../../domain/tool-name.ts';
import { billOf, type Bill } from '../charges.ts';
import type { ActCharge } from '../../ledger/acts.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { isPayerAccount, ownerId } from '../../ledger/accounts.ts';
import { DRILL_OWNER, getFuse, type Fuse } from '../../ledger/fuses.ts';
import type { Receipt, ReceiptInput } from '../../ledger/receipts.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { hopLimitProblem } from '../hop-limit.ts';
import { notFound, Problem } from '../problem.ts';
import { reply, type Reply } from '../reply.ts';
import { paidCallOf } from '../../payments/x402/keyless.ts';
import { hopDeniedAlert } from './alert-events.ts';
import { nudgeDeliverer } from '../site/webhooks.ts';

export const fuseIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a fuse id such as fuse_…');
export const actionSchema = z
  .looseObject({ kind: actKindSchema.describe(ACT_KINDS_TEXT) })
  .describe(
    "the action about to happen: `kind`, its act kind, is checked against the key's declared surface; its other members (an amount, a payee) are hashed into the receipt's `fingerprint`",
  );
export type Action = z.infer<typeof actionSchema>;
/** The agent's tool this hop gates (the MCP proxy and the guards send it): public in the receipt, as the act kind is. */
export const toolSchema = z.string().regex(TOOL_NAME, TOOL_NAME_MESSAGE);

/** Who is hopping: a key, or the public (drill fuses only, never charged). */
export interface Caller {
  key?: ApiKey;
  surface: readonly string[];
  /** The key declared its own surface (not the default): a hop must name its act kind. */
  declared?: boolean;
  /** Sees the public drill fuses: the public, and a keyless x402 payer (it has no fuse of its own). */
  public: boolean;
}

export function callerOf(key: ApiKey | undefined): Caller {
  return key
    ? { key, surface: key.surface ?? DEFAULT_ACT_KINDS, declared: key.surface !== undefined, public: isPayerAccount(key.account_id) }
    : { surface: DEFAULT_ACT_KINDS, public: true };
}

const owner = (c: Caller) => (c.key ? ownerId(c.key) : DRILL_OWNER);

/** Whether the caller sees `fuse`: its account's own; a drill fuse when it is the public (no key, or a keyless payer). */
export const seesFuse = (caller: Caller, fuse: Fuse): boolean =>
  fuse.key_id === owner(caller) || (caller.public && fuse.key_id === DRILL_OWNER);

/** The fuse if the caller may see it: its own fuses, or the drill fuses for the public. Else 404. */
export async function visibleFuse(db: Parameters<typeof getFuse>[0], caller: Caller, id: string): Promise<Fuse> {
  return visibleIn(caller, id, await getFuse(db, id));
}

/** The fuse if the caller may change its state (changeableIn): 404 when it cannot see it, 403 for a drill fuse. */
export async function changeableFuse(db: Parameters<typeof getFuse>[0], caller: Caller, id: string): Promise<Fuse> {
  return changeableIn(caller, id, await getFuse(db, id));
}

export interface GovernedHop {
  kind: 'hop' | 'act';
  fuseId: string;
  action?: Action | undefined;
  /** The agent's tool the hop gates (toolSchema), named in the receipt. */
  tool?: string | undefined;
}

export interface HopResult {
  fuse: Fuse;
  outcome: HopOutcome;
  receipt: Receipt;
  fingerprint?: string | undefined;
  /** What the act charges the key (the very lines it writes; for an x402-paid hop, its price); empty for a demo. */
  charges: readonly ActCharge[];
}

/** Charges of a governed hop, priced by its route's declaration: a permitted act pays the hop and the seal; a refusal pays NAP `hold`. */
function chargesOf(kind: GovernedHop['kind'], outcome: HopOutcome, keyId: string, bill: Bill): ActCharge[] {
  const hop = { keyId, ...bill(isRefusal(outcome.decision) ? 'hold' : 'execute_gate') };
  if (kind === 'act' && outcome.verdict) return [hop, { keyId, ...bill('seal') }];
  return [hop];
}

/** The bill of a hop that charges nothing (the public demos). */
export const UNCHARGED: Bill = billOf('public demo');

/** The receipt input of a hop decided on `fuse`. */
function hopAct(caller: Caller, req: GovernedHop, fuse: Fuse, outcome: HopOutcome, fp: string | undefined): ReceiptInput {
  return {
    kind: req.kind,
    decision: outcome.decision,
    subject: fuse.id,
    ...(caller.key ? { key_id: caller.key.id } : { demo: true }),
    ...(fp ? { fingerprint: fp } : {}),
    data: {
      state: fuse.state,
      ok: outcome.ok,
      verdict: outcome.verdict,
      reason: outcome.reason,
      ...(req.action ? { act_kind: req.action.kind } : {}),
      ...(req.tool ? { tool: req.tool } : {}),
    },
  };
}

/** `fuse` if the caller may see it (its own, or a drill fuse for the public); else 404. */
export const visibleIn = (caller: Caller, id: string, fuse: Fuse | undefined): Fuse => {
  // Another key's fuse is answered exactly like a missing one: 404, not 403.
  if (!fuse || !seesFuse(caller, fuse)) throw notFound(`no fuse ${id}`, 'unknown_fuse');
  return fuse;
};

/**
 * `fuse` if the caller may change its state (blow, panic, charge): its account's own. A drill
 * fuse belongs to no one: the public and keyless payers hop on it, nobody moves it (403), so it
 * stays in the state the docs promise every visitor. Else 404, as for a fuse it cannot see.
 */
export const changeableIn = (caller: Caller, id: string, fuse: Fuse | undefined): Fuse => {
  const seen = visibleIn(caller, id, fuse);
  if (seen.key_id === DRILL_OWNER) {
    throw new Problem({
      status: 403,
      code: 'drill_fuse_public',
      title: 'Forbidden',
      detail: `${id} is a public drill fuse: anyone may hop on it, nobody may change its state (it stays ${seen.state}); nothing was charged`,
      extra: { fuse_id: id, state: seen.state },
    });
  }
  return seen;
};

/**
 * Performs a governed hop: the fuse is read and the hop decided under the write
 * lock, together with the hops queued beside it (api/act.ts); `answer` builds
 * the reply body from the result, and `bill` (its route's declared charges)
 * prices what a key pays.
 *
 * A hop paid with x402 (the call's payment, api/act.ts) spends no hop of the
 * key's quota and charges it nothing: its lines are the payment's price, and
 * the pipeline settles it and names it in the receipt and the answer.
 */
export async function governedHop(
  event: ActEvent,
  ctx: AppContext,
  caller: Caller,
  req: GovernedHop,
  answer: (r: HopResult) => Reply,
  bill: Bill,
): Promise<Reply> {
  const key = caller.key;
  const paid = paidCallOf(event) !== undefined;
  if (key && !paid && key.hops_used >= key.hop_limit) throw hopLimitProblem(key);
  const fp = req.action ? fingerprint(req.action) : undefined;
  // A refused hop queued alert deliveries: wake the deliverer once it committed.
  let queued = false;
  const r = await commitAct(event, ctx, key, {
    needs: { fuseId: req.fuseId, hopOf: key && !paid ? key.id : undefined },
    decide(state) {
      const fuse = visibleIn(caller, req.fuseId, state.fuse);
      const outcome = decideHop(fuse.state, req.action?.kind, caller.surface, { kindRequired: caller.declared === true });
      // Batch-sealed: the batch that commits this receipt signs one checkpoint for all of it.
      const charges = key ? chargesOf(req.kind, outcome, key.id, bill) : [];
      const receipt = state.receipt(ctx, hopAct(caller, req, fuse, outcome, fp), { charges });
      // A refused hop of an account's key alerts its subscribers (docs/alerts.md); the public (drills, a keyless payer) alerts nobody.
      const records =
        key && !caller.public && !outcome.verdict
          ? [hopDeniedAlert(ownerId(key), key.id, fuse, outcome, receipt, req.action?.kind, req.tool)]
          : [];
      queued = records.length > 0;
      return { writes: { receipt, records }, reply: answer({ fuse, outcome, receipt, fingerprint: fp, charges }) };
    },
  });
  if (queued) nudgeDeliverer();
  return r;
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
  charge: chargeSchema
    .nullable()
    .describe(
      'what this hop charged: execute_gate, or the NAP hold for a refusal (for an x402-paid hop, the line its payment paid); null for a public demo',
    ),
  surface: z.array(z.string()).optional().describe("on a BLOCK only: the act kinds the key's declared surface holds"),
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
    ...(r.outcome.surface ? { surface: r.outcome.surface } : {}),
  };
}

export const hopReply = (r: HopResult): Reply => reply(hopBody(r));

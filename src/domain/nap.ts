/**
 * NAP (SPEC 1, 2.4): counterfactual replay of a refused act, and the evidence
 * root of a spoliation seal. Pure: no I/O.
 *
 * A replay runs the rule that was in force when the act was refused (named by
 * the `rules_version` its receipt records) on the facts the receipt records,
 * with any of them replaced by the caller's assumptions, and says what would
 * have happened.
 */
import { FUSE_STATES, type FuseState } from './fuse.ts';
import { leafHash, rootOf } from '../crypto/merkle.ts';
import { CLEAR_RULES_VERSION, decideClear, type ClearFacts } from './clear.ts';
import { decideHop } from './fuse.ts';
import { isRefusal } from './pricing.ts';

/** The hop rule of src/domain/fuse.ts, for receipts of kind hop and act (which do not name a version). */
export const FUSE_RULES_VERSION = 'fuse-rules-v1';

export interface ReplayOutcome {
  decision: string;
  rule: string;
  reason: string;
}

/** The facts recorded by a refused receipt, in the shape of its rules version. */
export interface ReplaySource {
  rules_version: string;
  facts: ClearFacts;
  /** The act kind (for the hop rule's surface check). */
  act_kind: string | undefined;
}

export class NotReplayable extends Error {}

/** Reads the replayable facts out of a receipt payload; throws NotReplayable when it records none. */
export function replaySource(kind: string, decision: string, data: Record<string, unknown> | undefined): ReplaySource {
  if (!isRefusal(decision)) throw new NotReplayable(`the receipt's decision ${decision} is not a refusal (BLOCK, HOLD, DENY, SILENCE)`);
  if ((kind === 'execute_gate' || kind === 'execute_gate_bind') && data?.rules_version === CLEAR_RULES_VERSION && data.facts) {
    return { rules_version: CLEAR_RULES_VERSION, facts: data.facts as ClearFacts, act_kind: data.act_kind as string | undefined };
  }
  if ((kind === 'hop' || kind === 'act') && typeof data?.state === 'string' && (FUSE_STATES as readonly string[]).includes(data.state)) {
    return {
      rules_version: FUSE_RULES_VERSION,
      facts: {
        state: data.state as FuseState,
        in_surface: decision !== 'BLOCK',
        exposure_micros: 0,
        hold_above_micros: null,
        review_requested: false,
      },
      act_kind: data.act_kind as string | undefined,
    };
  }
  throw new NotReplayable(`receipts of kind ${kind} record no facts a rule can be replayed on`);
}

/** Runs the rules version of `src` on its facts with `assume` laid over them. */
export function replay(src: ReplaySource, assume: Partial<ClearFacts>): { facts: ClearFacts; outcome: ReplayOutcome } {
  const facts: ClearFacts = { ...src.facts, ...assume };
  if (src.rules_version === CLEAR_RULES_VERSION) return { facts, outcome: decideClear(facts) };
  const kind = src.act_kind;
  const o = decideHop(facts.state, kind, facts.in_surface && kind ? [kind] : []);
  return {
    facts,
    outcome: { decision: o.decision, rule: o.decision === 'PERMIT' ? 'cleared' : o.decision.toLowerCase(), reason: o.reason },
  };
}

/**
 * RFC 9162 Merkle root over evidence hashes in the order given: each leaf is
 * the 32 raw bytes of one SHA-256, hashed as SHA-256(0x00 || leaf).
 */
export function evidenceRoot(sha256Hex: readonly string[]): string {
  return Buffer.from(rootOf(sha256Hex.map((h) => leafHash(Buffer.from(h, 'hex'))))).toString('hex');
}

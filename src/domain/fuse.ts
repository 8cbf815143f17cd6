/**
 * The fuse rules (SPEC 2.1, 3). Pure: no I/O.
 *
 *   state     ok     verdict (may act now)          decision
 *   LIVE      true   true, unless the action is     PERMIT, or BLOCK when the act kind
 *   ARMED     true   outside the declared surface   is outside the surface
 *   UNSIGNED  false  false                          SILENCE (the fuse was never charged)
 *   DEAD      false  false (fails closed)           DENY
 *
 * `ok` says whether the fuse itself allows acting; `verdict` whether THIS
 * action may go ahead now. A DEAD fuse never acts.
 */
export const FUSE_STATES = ['LIVE', 'ARMED', 'DEAD', 'UNSIGNED'] as const;
export type FuseState = (typeof FUSE_STATES)[number];

export type HopDecision = 'PERMIT' | 'BLOCK' | 'DENY' | 'SILENCE';

export interface HopOutcome {
  ok: boolean;
  verdict: boolean;
  decision: HopDecision;
  reason: string;
  /** On a BLOCK: the act kinds the declared surface holds, so that the caller sees what it may name. */
  surface?: readonly string[];
}

/** Transitions an operator may make (our extension; SPEC shows none but DEAD's refusal). */
export const CHARGEABLE_STATES: readonly FuseState[] = ['UNSIGNED', 'DEAD'];

/**
 * `kindRequired`: the caller declared its own surface (not the default), so a
 * hop that names no act kind is refused rather than let through unchecked: a
 * surface an agent could skip by leaving the kind out would govern nothing.
 */
export function decideHop(
  state: FuseState,
  actKind: string | undefined,
  surface: readonly string[],
  o: { kindRequired?: boolean } = {},
): HopOutcome {
  if (state === 'DEAD') return { ok: false, verdict: false, decision: 'DENY', reason: 'the fuse is DEAD: it fails closed' };
  if (state === 'UNSIGNED') {
    return { ok: false, verdict: false, decision: 'SILENCE', reason: 'the fuse is UNSIGNED: it has never been charged' };
  }
  if (actKind === undefined && o.kindRequired) {
    return {
      ok: true,
      verdict: false,
      decision: 'BLOCK',
      reason: 'no act kind: this key declares its surface, so a hop names the act (action.kind)',
      surface,
    };
  }
  if (actKind !== undefined && !surface.includes(actKind)) {
    return { ok: true, verdict: false, decision: 'BLOCK', reason: `act kind "${actKind}" is outside the declared surface`, surface };
  }
  return { ok: true, verdict: true, decision: 'PERMIT', reason: `the fuse is ${state}` };
}

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
}

/** Transitions an operator may make (our extension; SPEC shows none but DEAD's refusal). */
export const CHARGEABLE_STATES: readonly FuseState[] = ['UNSIGNED', 'DEAD'];

export function decideHop(state: FuseState, actKind: string | undefined, surface: readonly string[]): HopOutcome {
  if (state === 'DEAD') return { ok: false, verdict: false, decision: 'DENY', reason: 'the fuse is DEAD: it fails closed' };
  if (state === 'UNSIGNED') {
    return { ok: false, verdict: false, decision: 'SILENCE', reason: 'the fuse is UNSIGNED: it has never been charged' };
  }
  if (actKind !== undefined && !surface.includes(actKind)) {
    return { ok: true, verdict: false, decision: 'BLOCK', reason: `act kind "${actKind}" is outside the declared surface` };
  }
  return { ok: true, verdict: true, decision: 'PERMIT', reason: `the fuse is ${state}` };
}

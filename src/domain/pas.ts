/**
 * Policy-administration rules (SPEC 2.3, 3, 7). Pure: no I/O.
 *
 * Licence parent: create-free. No row = UNSIGNED; `charge` moves UNSIGNED or
 * DEAD to LIVE (CHARGE-only resurrection); `dead` blows it: the blown state is
 * stored and reported as DEAD (our name; SPEC leaves it open). A LIVE parent
 * with unredeemed, unexpired children reads ARMED.
 *
 * Bind ticket: a child of one parent, bound to one spend fingerprint, single
 * use, bind-only. A redeem consumes it only when the parent is LIVE, the
 * ticket and the caller's clock are fresh, it was never redeemed (nor its job
 * bound by another ticket), and the fingerprint matches; otherwise HALT.
 */
import { fingerprint } from '../crypto/canonical.ts';
import type { HopOutcome } from './fuse.ts';

export type StoredLicenseState = 'LIVE' | 'DEAD';
export type LicenseState = 'UNSIGNED' | 'LIVE' | 'ARMED' | 'DEAD';

/** States `charge` resurrects from. */
export const CHARGEABLE_LICENSE_STATES: readonly LicenseState[] = ['UNSIGNED', 'DEAD'];

/** The state a snapshot reports. `stored` is undefined when the parent was never charged. */
export function reportedLicenseState(stored: StoredLicenseState | undefined, hasOutstandingChild: boolean): LicenseState {
  if (stored === undefined) return 'UNSIGNED';
  if (stored === 'LIVE' && hasOutstandingChild) return 'ARMED';
  return stored;
}

/**
 * The spend fingerprint of a write: SHA-256 (lowercase hex) of its canonical
 * JSON (object keys sorted by UTF-16 code units, no whitespace, strings and
 * numbers as JSON.stringify writes them). Implementors hash the write they forward.
 */
export function spendFingerprint(write: unknown): string {
  return fingerprint(write);
}

export const HALT_REASONS = ['stale', 'replay', 'wrong_write', 'dead_parent'] as const;
export type HaltReason = (typeof HALT_REASONS)[number];

export interface TicketView {
  spend_fingerprint: string;
  expires_at: string;
  redeemed: boolean;
}

export interface RedeemInput {
  ticket: TicketView;
  /** The parent's stored state (undefined: never charged). */
  parent: StoredLicenseState | undefined;
  /** True when the ticket's job already has a redeemed spend leaf (bound by another ticket). */
  jobBound: boolean;
  /** The fingerprint presented with the redeem. */
  presented: string;
  /** The caller's UTC now (command radiation). */
  callerNow: Date;
  /** The service's clock. */
  serverNow: Date;
  skewSeconds: number;
}

export type RedeemDecision = { redeem: true } | { redeem: false; reason: HaltReason; detail: string };

/** First matching reason wins: replay, then dead parent, then staleness, then the wrong write. */
export function decideRedeem(i: RedeemInput): RedeemDecision {
  if (i.ticket.redeemed) return { redeem: false, reason: 'replay', detail: 'the ticket was already redeemed: it is single use' };
  if (i.jobBound) return { redeem: false, reason: 'replay', detail: "the ticket's job was already bound by another ticket" };
  if (i.parent !== 'LIVE') {
    return {
      redeem: false,
      reason: 'dead_parent',
      detail: `the licence parent is ${i.parent ?? 'UNSIGNED'}: a child cannot outlive its parent; charge it first`,
    };
  }
  const skewMs = i.skewSeconds * 1000;
  const drift = i.callerNow.getTime() - i.serverNow.getTime();
  if (Math.abs(drift) > skewMs) {
    return {
      redeem: false,
      reason: 'stale',
      detail: `the presented now is ${Math.round(drift / 1000)} s from the service clock (tolerance ${i.skewSeconds} s)`,
    };
  }
  const expires = Date.parse(i.ticket.expires_at);
  if (i.serverNow.getTime() >= expires || i.callerNow.getTime() >= expires) {
    return { redeem: false, reason: 'stale', detail: `the ticket expired at ${i.ticket.expires_at}` };
  }
  if (i.presented !== i.ticket.spend_fingerprint) {
    return { redeem: false, reason: 'wrong_write', detail: 'the fingerprint of the write does not match the one the ticket is bound to' };
  }
  return { redeem: true };
}

/**
 * PAS-A: hop first; a ticket only for a permitted hop on a LIVE parent and a
 * job not bound yet; bind-and-issue is never granted. Only a ticket is a 2xx:
 * a raised manual-underwriting issue is HOLD and an already-bound job BLOCK,
 * both refusals the caller must not bind on (SPEC 7).
 */
export type PreBindAOutcome =
  | { next_step: 'bind_only_ticket'; decision: 'ALLOW'; reason: string }
  | { next_step: 'manual_underwriting'; decision: 'HOLD'; reason: string; code: string }
  | { next_step: 'none'; decision: 'BLOCK'; reason: string; code: 'already_bound' };

/** The HTTP status of each PAS-A outcome: ALLOW 200, BLOCK 403, HOLD 409 (as pre-finality's NO_GO and HOLD). */
export const PRE_BIND_A_STATUS: Record<PreBindAOutcome['decision'], number> = { ALLOW: 200, BLOCK: 403, HOLD: 409 };

export function decidePreBindA(
  hop: HopOutcome,
  parent: LicenseState,
  requestedScope: 'bind_only' | 'bind_and_issue',
  jobBound = false,
): PreBindAOutcome {
  const manual = (code: string, reason: string): PreBindAOutcome => ({ next_step: 'manual_underwriting', decision: 'HOLD', code, reason });
  if (!hop.verdict) return manual(`hop_${hop.decision.toLowerCase()}`, hop.reason);
  if (jobBound)
    return {
      next_step: 'none',
      decision: 'BLOCK',
      code: 'already_bound',
      reason: 'the job is already bound: no ticket is issued for it (a second bind is refused)',
    };
  if (parent !== 'LIVE' && parent !== 'ARMED') return manual('license_not_live', `the licence parent is ${parent}: no child can be issued`);
  if (requestedScope === 'bind_and_issue')
    return manual('bind_and_issue_not_granted', 'bind-and-issue is not granted: only a bind-only ticket can be issued');
  return {
    next_step: 'bind_only_ticket',
    decision: 'ALLOW',
    reason: 'hop permitted and the licence parent is LIVE: bind-only ticket issued',
  };
}

/** PAS-B: the issue wrap. Halt means: do not call issue. */
export type PreBindBOutcome =
  { result: 'proceed'; decision: 'ALLOW'; reason: string } | { result: 'halt'; decision: 'HALT'; code: string; reason: string };

export function decidePreBindB(hop: HopOutcome, parent: LicenseState, jobBound: boolean): PreBindBOutcome {
  const halt = (code: string, reason: string): PreBindBOutcome => ({ result: 'halt', decision: 'HALT', code, reason });
  if (!hop.verdict) return halt(`hop_${hop.decision.toLowerCase()}`, hop.reason);
  if (parent !== 'LIVE' && parent !== 'ARMED') return halt('license_not_live', `the licence parent is ${parent}`);
  if (!jobBound) return halt('not_bound', 'the job has no redeemed bind ticket: issue follows a bind');
  return { result: 'proceed', decision: 'ALLOW', reason: 'hop permitted, licence parent LIVE, job bound: issue may proceed' };
}

/** Bind check: fuse and job identifiers only. */
export type BindCheckOutcome = { decision: 'ALLOW' | 'BLOCK'; code: string; reason: string };

export function decideBindCheck(hop: HopOutcome, jobBound: boolean): BindCheckOutcome {
  if (!hop.ok) return { decision: 'BLOCK', code: `fuse_${hop.decision === 'DENY' ? 'dead' : 'unsigned'}`, reason: hop.reason };
  if (jobBound)
    return { decision: 'BLOCK', code: 'already_bound', reason: 'the job already has a redeemed spend leaf: a second bind is refused' };
  return { decision: 'ALLOW', code: 'clear', reason: `the fuse may act and the job is not bound yet` };
}

export interface AuthorityGrant {
  lines: readonly string[];
  states: readonly string[];
  max_premium_micros: number;
}

export type AuthorityLimit = 'fuse' | 'premium' | 'line' | 'state';

export interface AuthorityOutcome {
  decision: 'ALLOW' | 'BLOCK';
  /** Every limit that failed, in the order fuse, premium, line, state. */
  failed: AuthorityLimit[];
  reason: string;
}

/** Delegated authority: a permitted hop plus the grant's premium, line and state limits. */
export function decideAuthority(
  hop: HopOutcome,
  grant: AuthorityGrant,
  req: { premium_micros: number; line: string; state: string },
): AuthorityOutcome {
  const failed: AuthorityLimit[] = [];
  const why: string[] = [];
  if (!hop.verdict) {
    failed.push('fuse');
    why.push(hop.reason);
  }
  if (req.premium_micros > grant.max_premium_micros) {
    failed.push('premium');
    why.push('the premium exceeds the authority limit');
  }
  if (!grant.lines.includes(req.line)) {
    failed.push('line');
    why.push(`line "${req.line}" is outside the grant`);
  }
  if (!grant.states.includes(req.state)) {
    failed.push('state');
    why.push(`state "${req.state}" is outside the grant`);
  }
  if (failed.length === 0) return { decision: 'ALLOW', failed, reason: 'within the delegated authority' };
  return { decision: 'BLOCK', failed, reason: why.join('; ') };
}

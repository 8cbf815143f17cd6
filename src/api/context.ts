/** What every route module receives: configuration, ledger and signing keys. */
import type { Config } from '../config.ts';
import type { Keyring } from '../crypto/keys.ts';
import type { Ledger } from '../ledger/db.ts';
import type { WitnessPolicy } from '../crypto/witness-policy.ts';

export interface AppContext {
  config: Config;
  ledger: Ledger;
  /** Replaced in place when the key file is rotated (SIGHUP). */
  keyring: Keyring;
  version: string;
  /** The parsed WITNESS_POLICY file, or null when no witness is configured (docs/trust-core.md). */
  witnessPolicy?: WitnessPolicy | null;
  /**
   * The clock (ms since the epoch) the read caches measure how long they reuse
   * an answer on (the key cache and GET /v1/me: AUTH_CACHE_MS; /health's probe:
   * a second); Date.now when unset. Set by tests that pass or hold those bounds
   * without waiting for them (test/support/server.ts).
   */
  cacheClock?: () => number;
  /**
   * The clock (ms since the epoch) job leases are taken, renewed and found run
   * out on (src/api/jobs.ts `leasedJob`); Date.now when unset. Set by tests
   * that make a lease run out without waiting for it.
   */
  leaseClock?: () => number;
  /** Set by tests to observe start-up; never holds secrets. */
  log: (level: 'info' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

/** The read caches' now (AppContext.cacheClock). */
export const cacheNow = (ctx: AppContext): number => (ctx.cacheClock ?? Date.now)();

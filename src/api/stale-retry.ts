/**
 * The one retry for an act whose state changed under it.
 *
 * Most acts decide under the write lock and have nothing to retry (api/act.ts).
 * An act that decides before the lock, because it signs, settles a payment or
 * prices on what it read (the execute gate, the GO JWT, the RTP
 * claim, the trigger fee, a depository attestation's chain), checks under the
 * lock that what it decided on still holds, and throws `StateChanged` if it moved.
 * The act is then read, decided, signed and committed again, a bounded number
 * of times; when the state keeps changing the answer is a 409 problem
 * (`state_changed`), never a 500. Nothing of a failed attempt is written or
 * charged: its savepoint is rolled back.
 */
import { Problem } from './problem.ts';

export class StateChanged extends Error {
  override name = 'StateChanged';
}

export const STALE_RETRIES = 3;

export function stateChangedProblem(): Problem {
  return new Problem({
    status: 409,
    code: 'state_changed',
    title: 'Conflict',
    detail: 'the state this act depends on kept changing while it was being committed; nothing was recorded or charged; retry',
  });
}

/**
 * For a route's own attempt loop: true when `e` says the state changed and another
 * attempt is allowed (`attempt` counts from 0); throws the 409 problem when the state
 * changed and the attempts are spent; false for any other error (rethrow it).
 * @example } catch (e) { if (retryIfStale(e, attempt)) continue; throw e; }
 */
export function retryIfStale(e: unknown, attempt: number, retries = STALE_RETRIES): boolean {
  if (!(e instanceof StateChanged)) return false;
  if (attempt >= retries) throw stateChangedProblem();
  return true;
}

/**
 * The one retry for a governed or metered act whose state changed under it.
 *
 * An act reads its state and decides before it takes the write lock (so the
 * decision and the receipt are made outside it); inside the transaction it
 * re-reads what it depends on and throws `StateChanged` if that moved. The act
 * is then read, decided and committed again, a bounded number of times; when
 * the state keeps changing the answer is a 409 problem (`state_changed`),
 * never a 500. Nothing of a failed attempt is written or charged: its
 * transaction (savepoint) is rolled back.
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

/** Runs `attempt` and runs it again (at most `retries` more times) while it throws StateChanged. */
export async function retryOnStale<T>(attempt: () => Promise<T>, retries = STALE_RETRIES): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (!retryIfStale(e, n, retries)) throw e;
    }
  }
}

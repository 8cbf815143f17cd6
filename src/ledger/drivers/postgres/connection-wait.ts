/**
 * A bound on waiting for a PostgreSQL connection. With a several-hosts URL and
 * `target_session_attrs=read-write`, postgres.js tries the hosts again and again
 * for as long as none accepts writes (a standby or a refused port is not an
 * error to it), and a query waiting for that connection waits as long. Past the
 * bound its caller gets an error answered `503 ledger_unavailable`.
 *
 * The query itself is left queued in postgres.js: cancelling the query a
 * connection is being made for leaves that connection stuck once it opens (it
 * skips the cancelled query and never takes the next one). Until that late query
 * settles, the next ones are refused at once instead of queuing behind it, so an
 * outage holds one query, not a growing queue, and the first answer from a host
 * that accepts writes (a standby promoted) lifts the refusal by itself.
 */

/** What a query that outwaited the bound is answered with: postgres.js's own code for a connection not made in time. */
function connectionWaitExceeded(ms: number): Error {
  return Object.assign(new Error(`no database host accepting writes answered within ${ms} ms`), { code: 'CONNECT_TIMEOUT' });
}

export class ConnectionWait {
  readonly #ms: number;
  /** While a query that outwaited the bound has not settled: the database is taken as unreachable. */
  #stalled = false;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** The refusal a query gets while stalled, or after the bound. */
  #exceeded(): Error {
    return connectionWaitExceeded(this.#ms);
  }

  /**
   * The answer of the query `issue` sends, or after the bound a refusal (while
   * stalled, at once and without sending it). `onLate` runs when a query that
   * outwaited the bound settles after all, before anything issued later can run
   * (the writer rolls back the transaction a late BEGIN opened). `onError` hears
   * the query's own failure, in time or late (never the bound's refusal).
   */
  bound<T>(issue: () => PromiseLike<T>, onLate?: (answered: boolean) => void, onError?: (error: unknown) => void): Promise<T> {
    if (this.#stalled) return Promise.reject(this.#exceeded());
    const query = issue();
    return new Promise<T>((resolve, reject) => {
      let late = false;
      const timer = setTimeout(() => {
        late = true;
        this.#stalled = true;
        reject(this.#exceeded());
      }, this.#ms);
      const settled = (answered: boolean) => {
        clearTimeout(timer);
        if (!late) return false;
        onLate?.(answered);
        this.#stalled = false;
        return true;
      };
      query.then(
        (value) => {
          if (!settled(true)) resolve(value);
        },
        (error: unknown) => {
          onError?.(error);
          if (!settled(false)) reject(error);
        },
      );
    });
  }
}

/**
 * A postgres.js pool that gives way to a new one once a connection of it was
 * lost. postgres.js 3.4.9 batches small writes behind a `setImmediate`; when a
 * socket closes with such a write pending, its teardown cancels the flush but
 * neither forgets it nor drops the buffered bytes, so that connection never
 * writes again: each later handshake of it is buffered, never sent, and times
 * out (connect_timeout, 5 s), until its buffer passes 1 KiB and goes out as
 * garbage some ten attempts later. After a failover that kept a node from
 * writing for about 40 s. A new pool's connections start clean; the old pool
 * is ended (what it still runs may finish, within the connect timeout).
 */
import type { Pool } from './connection.ts';

export class RenewedPool {
  readonly #open: (onclose: () => void) => Pool;
  readonly #onclose: () => void;
  readonly #endWithinS: number;
  #pool: Pool;
  #stale = false;

  /**
   * `open` makes a pool that calls the `onclose` it is given when a connection of it closes;
   * `onclose` here hears only the current pool's closes, never those of a pool already replaced.
   */
  constructor(open: (onclose: () => void) => Pool, endWithinS: number, onclose: () => void = () => {}) {
    this.#open = open;
    this.#onclose = onclose;
    this.#endWithinS = endWithinS;
    this.#pool = this.#make();
  }

  #make(): Pool {
    const pool: Pool = this.#open(() => {
      if (pool === this.#pool) this.#onclose();
    });
    return pool;
  }

  /** The pool to use now: a new one if a connection of the last one was lost since. */
  get pool(): Pool {
    if (this.#stale) {
      const old = this.#pool;
      this.#stale = false;
      this.#pool = this.#make();
      void old.end({ timeout: this.#endWithinS });
    }
    return this.#pool;
  }

  /** A connection of the current pool was lost: the next use gets a new pool. */
  lost(): void {
    this.#stale = true;
  }

  end(timeoutS: number): Promise<void> {
    return this.#pool.end({ timeout: timeoutS });
  }
}

/**
 * An error postgres.js gives a query whose connection was lost under it (closed,
 * reset) or could not be made in time: after it, that connection may be one that
 * can no longer write.
 */
export function isConnectionLoss(e: unknown): boolean {
  return /^(CONNECTION_CLOSED|CONNECT_TIMEOUT|ECONNRESET|EPIPE)$/.test(String((e as { code?: string })?.code ?? ''));
}

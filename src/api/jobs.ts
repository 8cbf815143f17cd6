/**
 * Background jobs of the server (webhook delivery, the clearing timer).
 * A route module only declares its jobs (router.job); the server starts them
 * after it listens and stops them on close, awaiting the work in flight, before
 * the ledger closes. Describing the API (scripts/write-openapi.ts) never starts one.
 */
import type { AppContext } from './context.ts';

export interface BackgroundJob {
  readonly name: string;
  /** Starts the timer; resolves once the job's start-up work, if any, is done (the server awaits it). */
  start(): void | Promise<void>;
  /** Stops the timer and resolves when the work in flight has finished. */
  stop(): Promise<void>;
}

/**
 * Runs `tick` every `everyMs` (never two at once); a failing tick is logged and the next one runs.
 * `atStart`, if given, runs once as the job starts (as a tick: awaited by stop).
 */
export function intervalJob(ctx: AppContext, name: string, everyMs: number, tick: () => Promise<void>, atStart?: () => Promise<void>): BackgroundJob {
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  const run = (work: () => Promise<void>) => {
    if (inFlight) return;
    inFlight = work()
      .catch((e) => ctx.log('error', `${name} failed`, { error: String(e) }))
      .finally(() => (inFlight = undefined));
  };
  return {
    name,
    start() {
      if (atStart) run(atStart);
      timer = setInterval(() => run(tick), everyMs);
      timer.unref();
      return inFlight;
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
    },
  };
}

/**
 * Background jobs of the server (webhook delivery, the clearing timer).
 * A route module only declares its jobs (router.job); the server starts them
 * after it listens, each under its lease (`leasedJob`: one node of a database
 * runs it), and stops them on close, awaiting the work in flight, before the
 * ledger closes. Describing the API (scripts/write-openapi.ts) never starts one.
 */
import { releaseLease, takeLease } from '../ledger/leases.ts';
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
export function intervalJob(
  ctx: AppContext,
  name: string,
  everyMs: number,
  tick: () => Promise<void>,
  atStart?: () => Promise<void>,
): BackgroundJob {
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

/** A background job that runs only on the node holding its lease in the database (src/ledger/leases.ts). */
export interface LeasedJob extends BackgroundJob {
  /** Who takes the lease: this node. */
  readonly holder: string;
  /** Whether this node holds the lease and runs the job now. */
  readonly running: boolean;
  /** One turn: takes or renews the lease, then starts or stops the job to match (also run every third of a lease). */
  turn(): Promise<void>;
}

/**
 * Runs `job` on one node of the database at a time: the node that holds the
 * lease named after the job. Every third of JOB_LEASE_MS each node tries to
 * take or renew it; the holder starts the job, a node that lost it (it could
 * not renew in time) stops it, and one that stops releases it. A holder that
 * dies is replaced once its lease runs out: within 4/3 of JOB_LEASE_MS.
 * A holder paused past its lease (and the job it runs) may overlap its
 * successor for a moment, so the jobs stay safe to run twice (conditional
 * claims in the database, at-least-once deliveries).
 */
export function leasedJob(ctx: AppContext, job: BackgroundJob, holder: string): LeasedJob {
  const leaseMs = ctx.config.JOB_LEASE_MS;
  const now = () => (ctx.leaseClock ?? Date.now)();
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let heldUntil = 0;
  let turning: Promise<void> | undefined;
  const turnOnce = async () => {
    const at = now();
    let held: boolean;
    try {
      held = await ctx.ledger.write((tx) => takeLease(tx, job.name, holder, at, at + leaseMs), { unseen: true });
      if (held) heldUntil = at + leaseMs;
    } catch (e) {
      // The database cannot say: the lease held so far is good until it runs out.
      held = now() < heldUntil;
      ctx.log('error', `${job.name} lease not renewed`, { error: String(e) });
    }
    if (held && !running) {
      running = true;
      await job.start();
    } else if (!held && running) {
      running = false;
      await job.stop();
    }
  };
  const turn = (): Promise<void> => {
    turning ??= turnOnce().finally(() => (turning = undefined));
    return turning;
  };
  return {
    name: job.name,
    holder,
    get running() {
      return running;
    },
    turn,
    async start() {
      await turn();
      timer = setInterval(
        () => void turn().catch((e) => ctx.log('error', `${job.name} lease turn failed`, { error: String(e) })),
        Math.floor(leaseMs / 3),
      );
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await turning?.catch(() => undefined);
      if (!running) return;
      running = false;
      await job.stop();
      await ctx.ledger.write((tx) => releaseLease(tx, job.name, holder), { unseen: true }).catch(() => undefined);
    },
  };
}

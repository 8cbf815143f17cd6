/**
 * The write probe behind /health: one tiny write through the write queue (the
 * path every acknowledged act takes), with a deadline. Concurrent /health calls
 * share one probe, and a result is reused for a second, so polling /health
 * adds at most one write per second. The read ping is reused for the same
 * second (databaseState), so a /health under load runs no statement at all.
 * The second is counted on the clock the caller gives (ms since the epoch).
 */
import type { Ledger } from './ledger.ts';

export const HEALTH_REUSE_MS = 1000;

interface ProbeState {
  inFlight?: Promise<boolean>;
  result?: { ok: boolean; at: number };
}

const states = new WeakMap<Ledger, ProbeState>();

async function probeOnce(ledger: Ledger, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const write = ledger.write((tx) =>
    tx.execute({
      sql: 'INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET probed_at = excluded.probed_at',
      args: [new Date().toISOString()],
    }),
  );
  try {
    return await Promise.race([
      write.then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** True when a write commits within `timeoutMs`. */
export function canWrite(ledger: Ledger, timeoutMs: number, clock: () => number = Date.now): Promise<boolean> {
  let state = states.get(ledger);
  if (!state) states.set(ledger, (state = {}));
  if (state.result && clock() - state.result.at < HEALTH_REUSE_MS) return Promise.resolve(state.result.ok);
  const s = state;
  s.inFlight ??= probeOnce(ledger, timeoutMs).then((ok) => {
    s.result = { ok, at: clock() };
    s.inFlight = undefined;
    return ok;
  });
  return s.inFlight;
}

const reads = new WeakMap<Ledger, { ok: boolean; at: number }>();

/**
 * What /health reports about the database: whether it answers a read (the
 * ping, reused for HEALTH_REUSE_MS like the write probe) and whether a write commits
 * (canWrite). A /health answer is at most a second old; a failing write is
 * still reported, on the first probe after it starts failing.
 */
export async function databaseState(
  ledger: Ledger,
  timeoutMs: number,
  clock: () => number = Date.now,
): Promise<{ readable: boolean; writable: boolean }> {
  const now = clock();
  let read = reads.get(ledger);
  if (!read || now - read.at >= HEALTH_REUSE_MS) reads.set(ledger, (read = { ok: await ledger.ping(), at: now }));
  if (!read.ok) return { readable: false, writable: false };
  return { readable: true, writable: await canWrite(ledger, timeoutMs, clock) };
}

/**
 * databaseState without waiting: the state when both the ping and the write
 * probe (when the ping succeeded) are younger than HEALTH_REUSE_MS, else undefined
 * (then databaseState runs what is due). Lets /health answer at the Node level.
 */
export function freshDatabaseState(ledger: Ledger, now = Date.now()): { readable: boolean; writable: boolean } | undefined {
  const read = reads.get(ledger);
  if (!read || now - read.at >= HEALTH_REUSE_MS) return undefined;
  if (!read.ok) return { readable: false, writable: false };
  const write = states.get(ledger)?.result;
  if (!write || now - write.at >= HEALTH_REUSE_MS) return undefined;
  return { readable: true, writable: write.ok };
}

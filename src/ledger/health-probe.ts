/**
 * The write probe behind /health: one tiny write through the write queue (the
 * path every acknowledged act takes), with a deadline. Concurrent /health calls
 * share one probe, and a result is reused for a second, so polling /health
 * adds at most one write per second. The read ping is reused for the same
 * second (databaseState), so a /health under load runs no statement at all.
 */
import type { Ledger } from './ledger.ts';

const REUSE_MS = 1000;

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
export function canWrite(ledger: Ledger, timeoutMs: number): Promise<boolean> {
  let state = states.get(ledger);
  if (!state) states.set(ledger, (state = {}));
  if (state.result && Date.now() - state.result.at < REUSE_MS) return Promise.resolve(state.result.ok);
  const s = state;
  s.inFlight ??= probeOnce(ledger, timeoutMs).then((ok) => {
    s.result = { ok, at: Date.now() };
    s.inFlight = undefined;
    return ok;
  });
  return s.inFlight;
}

const reads = new WeakMap<Ledger, { ok: boolean; at: number }>();

/**
 * What /health reports about the database: whether it answers a read (the
 * ping, reused for REUSE_MS like the write probe) and whether a write commits
 * (canWrite). A /health answer is at most a second old; a failing write is
 * still reported, on the first probe after it starts failing.
 */
export async function databaseState(ledger: Ledger, timeoutMs: number): Promise<{ readable: boolean; writable: boolean }> {
  const now = Date.now();
  let read = reads.get(ledger);
  if (!read || now - read.at >= REUSE_MS) reads.set(ledger, (read = { ok: await ledger.ping(), at: now }));
  if (!read.ok) return { readable: false, writable: false };
  return { readable: true, writable: await canWrite(ledger, timeoutMs) };
}

/**
 * databaseState without waiting: the state when both the ping and the write
 * probe (when the ping succeeded) are younger than REUSE_MS, else undefined
 * (then databaseState runs what is due). Lets /health answer at the Node level.
 */
export function freshDatabaseState(ledger: Ledger): { readable: boolean; writable: boolean } | undefined {
  const now = Date.now();
  const read = reads.get(ledger);
  if (!read || now - read.at >= REUSE_MS) return undefined;
  if (!read.ok) return { readable: false, writable: false };
  const write = states.get(ledger)?.result;
  if (!write || now - write.at >= REUSE_MS) return undefined;
  return { readable: true, writable: write.ok };
}

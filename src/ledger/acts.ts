/**
 * Governed and metered acts, committed set-oriented.
 *
 * An act is data plus one decision: what state it needs read under the write
 * lock (a fuse, a key's hop quota), and `decide`, which turns that state into
 * what the act writes (its receipt, its charges, its idempotent answer) and
 * its result (or `run`, see ActPlan). Acts queued together are committed by `commitActs` with a constant
 * number of statements, whatever their count:
 *
 *   read    the batch's fuses in one query, its keys in one query;
 *   decide  each act in memory, in arrival order, under the write lock
 *           (an act that throws writes nothing and fails alone);
 *   write   the keys' hop counts, the monthly hop counters, the meter, the
 *           receipts log (one append for all leaves), the receipts and the
 *           records the acts declared (records.ts), each with multi-row
 *           statements.
 *
 * So a decision never rests on a state read before the lock: no re-read, no
 * retry. The same statements go to a libSQL server, so there too a batch of
 * pure acts costs a constant number of round trips. Nothing here knows HTTP:
 * refusals are ledger errors the API maps (api/act.ts).
 */
import { readHopQuotas, writeHopCounts, type HopQuota } from './api-keys.ts';
import { getFuses, type Fuse } from './fuses.ts';
import { checkCharge, recordCharges } from './meter.ts';
import { writeRecords, type ActRecord } from './records.ts';
import { recordReceipts, type Receipt } from './receipts.ts';
import type { Transaction } from './sql.ts';
import { storeAnswer, type StoredAnswer } from './idempotency.ts';

export type { StoredAnswer };

/** What an act needs read under the write lock. */
export interface ActNeeds {
  /** The fuse the decision depends on (undefined in the state when it does not exist). */
  fuseId?: string | undefined;
  /** The key whose hop quota this act consumes once it is decided (one hop). */
  hopOf?: string | undefined;
}

export interface ActState {
  fuse: Fuse | undefined;
}

/** One charge of an act; its meter row refers to the act's receipt. */
export interface ActCharge {
  keyId: string;
  sku: string;
  amountMicros: number | bigint;
  nap?: boolean | undefined;
}

export interface ActWrites {
  receipt?: Receipt | undefined;
  charges?: readonly ActCharge[] | undefined;
  answer?: StoredAnswer | undefined;
  /** The act's rows in its area's tables, written with the group's (records.ts). */
  records?: readonly ActRecord[] | undefined;
  /** The fuse as this act left it (a transition): the acts after it in the group decide on this state. */
  fuse?: Fuse | undefined;
}

export interface Decided<T> {
  writes: ActWrites;
  result: T;
}

/**
 * An act decides in one of two ways:
 *  - `decide`, pure, from the state read for the whole group (a hop);
 *  - `run`, for an act whose decision reads or writes its area's own rows under
 *    the lock (an ASTL version, a ticket claim, a trigger's state): it runs alone
 *    in a savepoint, in arrival order, and sees what the acts before it in the
 *    group did to those rows. Its receipt and charges are still written with
 *    the group's, after the last act has run: no act reads the receipts, the
 *    meter or the receipts log inside its `run`.
 * Either throws to refuse: then nothing of the act is written.
 */
export type ActPlan<T> = { needs: ActNeeds } & (
  | { decide(state: ActState): Decided<T>; run?: undefined }
  | { run(tx: Transaction, state: ActState): Promise<Decided<T>>; decide?: undefined }
);

/** The key's hop quota for this period is used up (under the write lock). */
export class HopLimitReached extends Error {
  override name = 'HopLimitReached';
  readonly keyId: string;
  readonly hopLimit: number;
  constructor(keyId: string, hopLimit: number) {
    super(`key ${keyId} has used its ${hopLimit} hops`);
    this.keyId = keyId;
    this.hopLimit = hopLimit;
  }
}

/** The key was revoked (or deleted) after the request was authenticated. */
export class KeyRevoked extends Error {
  override name = 'KeyRevoked';
  readonly keyId: string;
  constructor(keyId: string) {
    super(`key ${keyId} has been revoked`);
    this.keyId = keyId;
  }
}

export type ActOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Commits `acts` inside the caller's write transaction; one outcome per act, in
 * order. Throws only when the database fails (then the caller rolls back and
 * decides what each act gets).
 */
export async function commitActs(tx: Transaction, acts: ReadonlyArray<ActPlan<unknown>>): Promise<ActOutcome[]> {
  const now = new Date();
  const fuseIds = new Set<string>();
  const keyIds = new Set<string>();
  for (const a of acts) {
    if (a.needs.fuseId) fuseIds.add(a.needs.fuseId);
    if (a.needs.hopOf) keyIds.add(a.needs.hopOf);
  }
  const fuses = await getFuses(tx, fuseIds);
  const quotas = await readHopQuotas(tx, keyIds, now);

  const outcomes: ActOutcome[] = [];
  const decided: ActWrites[] = [];
  for (const act of acts) {
    const state: ActState = { fuse: act.needs.fuseId ? fuses.get(act.needs.fuseId) : undefined };
    // Checked last, so that an act refused for another reason (an unknown fuse) spends no hop.
    const take = () => (act.needs.hopOf ? takeHop(quotas, act.needs.hopOf) : undefined);
    try {
      let d: Decided<unknown>;
      if (act.run) {
        d = await runAlone(tx, async () => {
          const r = await act.run(tx, state);
          checkCharges(r.writes);
          take();
          return r;
        });
      } else {
        d = act.decide(state);
        checkCharges(d.writes);
        take();
      }
      if (d.writes.fuse) fuses.set(d.writes.fuse.id, d.writes.fuse);
      decided.push(d.writes);
      outcomes.push({ ok: true, value: d.result });
    } catch (error) {
      outcomes.push({ ok: false, error });
    }
  }
  await writeHopCounts(tx, [...quotas.values()], now);
  await writeActs(tx, decided);
  return outcomes;
}

function takeHop(quotas: Map<string, HopQuota>, keyId: string): void {
  const q = quotas.get(keyId);
  if (!q) throw new KeyRevoked(keyId);
  if (q.used + q.added >= q.hopLimit) throw new HopLimitReached(keyId, q.hopLimit);
  q.added++;
}

/** Every charge refers to its act's receipt, and stays within the bound of one charge. */
function checkCharges({ charges, receipt }: ActWrites): void {
  if (charges?.length && !receipt) throw new Error('every charge refers to the receipt of its act: this act has charges and no receipt');
  for (const c of charges ?? []) checkCharge(c);
}

async function runAlone<T>(tx: Transaction, write: () => Promise<T>): Promise<T> {
  await tx.execute('SAVEPOINT act');
  try {
    const out = await write();
    await tx.execute('RELEASE act');
    return out;
  } catch (e) {
    await tx.execute('ROLLBACK TO act');
    await tx.execute('RELEASE act');
    throw e;
  }
}

async function writeActs(tx: Transaction, acts: ActWrites[]): Promise<void> {
  await recordReceipts(tx, acts.flatMap((a) => (a.receipt ? [a.receipt] : [])));
  await recordCharges(tx, acts.flatMap((a) => (a.charges ?? []).map((c) => ({ ...c, ref: a.receipt!.receipt_id }))));
  await writeRecords(tx, acts.flatMap((a) => a.records ?? []));
  for (const a of acts) if (a.answer) await storeAnswer(tx, a.answer);
}

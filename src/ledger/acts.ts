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
 *           receipts log (one append for all leaves) and the receipts, each
 *           with multi-row statements.
 *
 * So a decision never rests on a state read before the lock: no re-read, no
 * retry. The same statements are sent to a libSQL server, so there too a
 * batch of pure acts costs a constant number of round trips. Nothing here knows HTTP; errors are ledger errors the API maps.
 */
import type { InValue } from '@libsql/client';
import { periodStart, type HopPeriod } from '../domain/quota.ts';
import { MAX_CHARGE_MICROS } from '../domain/money.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { nowIso } from '../ids.ts';
import { getFuses } from './fuses.ts';
import type { Fuse } from './fuses.ts';
import { appendLeaves, insertRows } from './log.ts';
import type { Receipt } from './receipts.ts';
import { RECEIPTS_LOG } from './seals.ts';
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
 *    group did to those rows. Its receipt, charges and rows are still written
 *    with the group's, after the last act has run: no act reads the receipts,
 *    meter or receipts log inside its `run`.
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

interface KeyQuota {
  id: string;
  hopLimit: number;
  hopPeriod: HopPeriod;
  periodStart: string;
  used: number;
  /** Hops this batch added. */
  added: number;
}

/** Rows of `sql` for a set of ids, bound as one JSON array: one statement text whatever the count. */
async function byIds(tx: Transaction, sql: string, ids: Set<string>) {
  if (ids.size === 0) return [];
  return (await tx.execute({ sql, args: [JSON.stringify([...ids])] })).rows;
}

async function readQuotas(tx: Transaction, ids: Set<string>, now: Date): Promise<Map<string, KeyQuota>> {
  const rows = await byIds(
    tx,
    'SELECT id, hop_limit, hops_used, hop_period, period_start FROM api_keys WHERE revoked_at IS NULL AND id IN (SELECT value FROM json_each(?))',
    ids,
  );
  return new Map(
    rows.map((r) => {
      const hopPeriod = String(r.hop_period) as HopPeriod;
      const start = periodStart(hopPeriod, now);
      // A count stored in an earlier period is spent: this period starts at 0.
      const used = String(r.period_start ?? '') === start ? Number(r.hops_used) : 0;
      return [String(r.id), { id: String(r.id), hopLimit: Number(r.hop_limit), hopPeriod, periodStart: start, used, added: 0 }];
    }),
  );
}

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
  const quotas = await readQuotas(tx, keyIds, now);

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
  await writeHops(tx, [...quotas.values()].filter((q) => q.added > 0), now);
  await writeActs(tx, decided, nowIso(now));
  return outcomes;
}

function takeHop(quotas: Map<string, KeyQuota>, keyId: string): KeyQuota {
  const q = quotas.get(keyId);
  if (!q) throw new KeyRevoked(keyId);
  if (q.used + q.added >= q.hopLimit) throw new HopLimitReached(keyId, q.hopLimit);
  q.added++;
  return q;
}

/** A route that let an input push a charge past the bound has a bug: refuse the act rather than store it. */
function checkCharges({ charges, receipt }: ActWrites): void {
  if (charges?.length && !receipt) throw new Error('every charge refers to the receipt of its act: this act has charges and no receipt');
  for (const c of charges ?? []) {
    const amount = BigInt(c.amountMicros);
    if (amount < 0n || amount > MAX_CHARGE_MICROS) throw new RangeError(`charge ${amount} micro-USD for ${c.sku} is outside 0..${MAX_CHARGE_MICROS}`);
  }
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

/** The keys' period counts (absolute: read and written under the same lock) and the monthly counters. */
async function writeHops(tx: Transaction, quotas: KeyQuota[], now: Date): Promise<void> {
  if (quotas.length === 0) return;
  for (const q of quotas) {
    await tx.execute({ sql: 'UPDATE api_keys SET hops_used = ?, period_start = ? WHERE id = ?', args: [q.used + q.added, q.periodStart, q.id] });
  }
  const month = now.toISOString().slice(0, 7);
  await insertRows(
    tx,
    'INSERT INTO key_hops_monthly (key_id, month, hops) VALUES',
    '(?, ?, ?)',
    quotas.map((q) => [q.id, month, q.added]),
    ' ON CONFLICT (key_id, month) DO UPDATE SET hops = hops + excluded.hops',
  );
}

async function writeActs(tx: Transaction, acts: ActWrites[], now: string): Promise<void> {
  const receipts = acts.flatMap((a) => (a.receipt ? [a.receipt] : []));
  if (receipts.length) {
    const payloads = receipts.map((r) => canonicalJson(r.payload));
    const { first } = await appendLeaves(tx, RECEIPTS_LOG, receipts.map((r, i) => Buffer.from(r.jws ?? payloads[i]!, 'utf8')));
    await insertRows(
      tx,
      'INSERT INTO receipts (id, kind, decision, subject, key_id, jws, payload, created_at, log_index) VALUES',
      '(?, ?, ?, ?, ?, ?, ?, ?, ?)',
      receipts.map((r, i) => [r.receipt_id, r.payload.kind, r.payload.decision, r.payload.subject ?? null, r.payload.key_id ?? null, r.jws ?? '', payloads[i]!, r.payload.issued_at, first + i]),
    );
  }
  const meter = acts.flatMap((a) => (a.charges ?? []).map((c): InValue[] => [c.keyId, c.sku, BigInt(c.amountMicros), c.nap ? 1 : 0, a.receipt!.receipt_id, now]));
  await insertRows(tx, 'INSERT INTO meter (key_id, sku, amount_micros, nap, ref, created_at) VALUES', '(?, ?, ?, ?, ?, ?)', meter);
  for (const a of acts) if (a.answer) await storeAnswer(tx, a.answer);
}

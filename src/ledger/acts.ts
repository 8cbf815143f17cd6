/**
 * Governed and metered acts, committed set-oriented.
 *
 * An act is data plus one decision: what state it needs read under the write
 * lock (a fuse, a key's hop quota), and `decide`, which turns that state into
 * what the act writes (its receipt, its charges, its idempotent answer) and
 * its result (or `run`, see ActPlan). Acts queued together are committed by `commitActs` with a constant
 * number of statements, whatever their count:
 *
 *   read    the batch's fuses in one query, its keys in one query, and
 *           the rows its `run` acts declare, one query per area (needs.rows);
 *   decide  each act in memory, in arrival order, under the write lock
 *           (an act that throws writes nothing and fails alone);
 *   write   the keys' hop counters, the receipts log (one append for all
 *           receipts: a row per tile touched, ledger/log.ts), the usage
 *           counters and the keys' receipt lists (one row per key and
 *           batch), and the records the acts declared (records.ts), each
 *           with multi-row statements.
 *
 * A receipt is minted by its act under the lock (`state.receipt`), because
 * its id carries the log index it will have (ledger/receipts.ts); an act
 * that throws after minting leaves no gap, its index goes to the next act.
 * An entry of another log (an ASTL manifest) is appended the same way
 * (`state.append`): its index is known at once, from the log's edge read once
 * for the group, its inclusion proof at the group's end, and the group's
 * entries of that log are written together with its receipts.
 *
 * So a decision never rests on a state read before the lock: no re-read, no
 * retry. The same statements go to a libSQL server, so there too a batch of
 * pure acts costs a constant number of round trips. Nothing here knows HTTP:
 * refusals are ledger errors the API maps (api/act.ts).
 */
import { readHopQuotas, writeHopCounts, type HopQuota } from './hop-counters.ts';
import { checkSpend, spendAlerts, type CapState } from './spend-caps.ts';
import { getFuses, type Fuse } from './fuses.ts';
import { addKeyReceipts } from './key-receipts.ts';
import { appendLeaves, lockEdge, PendingAppend, writeAppend, type Inclusion } from './log.ts';
import { edgeRoot, inclusionFrom, leafHashReader, MAX_ENTRY_BYTES, type Edge } from '../crypto/tiles.ts';
import type { Hash, HashReader } from '../crypto/merkle.ts';
import { addToCounters, checkCharge } from './meter.ts';
import { writeRecords, type ActRecord } from './records.ts';
import {
  mintReceipt,
  receiptLeaf,
  RECEIPTS_LOG,
  TEST_RECEIPTS_LOG,
  type Receipt,
  type ReceiptInput,
  type ReceiptIssuer,
  type ReceiptOpening,
} from './receipts.ts';
import { allSent, type Transaction } from './sql.ts';
import { storeAnswer, type StoredAnswer } from './idempotency.ts';

export type { StoredAnswer };

/** What an act needs read under the write lock. */
export interface ActNeeds {
  /** The fuse the decision depends on (undefined in the state when it does not exist). */
  fuseId?: string | undefined;
  /** The key whose hop quota this act consumes once it is decided (one hop). */
  hopOf?: string | undefined;
  /**
   * The key whose monthly spend caps (its own, its account's) the charges of
   * this act's receipt are checked against (spend-caps.ts); read with the hop
   * quotas. A charge to a key not named here or in `hopOf` is not checked.
   */
  spendOf?: string | undefined;
  /** Rows of its area a `run` act decides on, read with the group's (`state.row`). */
  rows?: ReadonlyArray<RowNeed> | undefined;
  /**
   * A test key's act (docs/test-mode.md): its receipt is minted in the test
   * log with the claim `test: true`, and its charges are stated but never
   * counted (no usage counter, no spend cap). Decided exactly as a live act.
   */
  test?: boolean | undefined;
}

/**
 * An area's rows that `run` acts decide on, read for a whole group in one
 * statement (the PAS redeems' tickets, ledger/pas.ts): `read` answers the rows
 * of `keys` that exist, by key.
 */
export interface GroupReader<V> {
  read(tx: Transaction, keys: readonly string[]): Promise<Map<string, V>>;
}

export interface RowNeed {
  reader: GroupReader<unknown>;
  key: string;
}

export interface ActState {
  fuse: Fuse | undefined;
  /**
   * Mints this act's receipt (at most one per act), with the charges it
   * states: the key charged is the receipt's `key_id`. Put it in the act's
   * writes; a receipt minted and not written is an error.
   */
  receipt(
    issuer: ReceiptIssuer,
    input: ReceiptInput,
    opts?: { signed?: boolean; charges?: readonly ActCharge[]; openings?: readonly ReceiptOpening[] },
  ): Receipt;
  /**
   * Appends `leaf` to `log` (not the receipts log) as this act's entry: its
   * index and leaf hash at once, the entry written with the group's, its
   * inclusion proof at the group's end (`atGroupEnd`). Within a group only
   * this way appends to that log (another append to it in the same
   * transaction fails the group, which is then committed act by act). An act
   * that throws leaves no gap: its index goes to the next.
   */
  append(log: string, leaf: Uint8Array): Promise<Appended>;
  /**
   * Runs `then` once every act of the group has run, if this act succeeded.
   * There `group.inclusion` proves an entry this act appended at the size the
   * group leaves its log at, so that the group's answers share one checkpoint
   * (one signature). It runs before the group's answers are stored or sent,
   * so `then` may complete this act's reply. It must not throw.
   */
  atGroupEnd(then: (group: GroupEnd) => void): void;
  /**
   * Row `key` of `reader` (undefined when there is none) as the acts before
   * this one left it: from the group's read of the rows its acts declared
   * (`needs.rows`) while no act of the group has changed a row yet, else read
   * again. So a group of refusals reads its rows once, and a group whose first
   * act claims a row still decides every act on the row as it is now.
   */
  row<V>(reader: GroupReader<V>, key: string): Promise<V | undefined>;
  /**
   * Row `key` of `reader` as this act leaves it, for the acts after it in the
   * group, when the act writes that row as one of its records (a new ASTL
   * version): `row` answers it from here on, before any read. Undone with the
   * act if it throws. The act's records must write exactly this.
   */
  setRow<V>(reader: GroupReader<V>, key: string, value: V): void;
}

/** An entry an act appended: its index and leaf hash (its proof comes at the group's end). */
export interface Appended {
  index: number;
  leafHash: Hash;
}

/** What a group's acts appended, once all of them have run. */
export interface GroupEnd {
  /** The entry at `index` of `log`, appended by this group: its inclusion proof at the log's size after the group. */
  inclusion(log: string, index: number): Inclusion;
}

/** One charge of an act, stated by its receipt and added to the usage counters. */
export interface ActCharge {
  keyId: string;
  sku: string;
  amountMicros: number | bigint;
  nap?: boolean | undefined;
}

export interface ActWrites {
  receipt?: Receipt | undefined;
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
 *    group did to those rows. Its receipt is still written with the group's,
 *    after the last act has run: no act reads the receipts log, the usage
 *    counters or the hop counters inside its `run`.
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

/** A receipt longer than a C2SP bundle entry can be (2^16 - 1 bytes): the act is refused, nothing is written. */
export class ReceiptTooLarge extends Error {
  override name = 'ReceiptTooLarge';
  readonly bytes: number;
  constructor(bytes: number) {
    super(`the receipt of this act would be ${bytes} bytes; a log entry holds at most ${MAX_ENTRY_BYTES}`);
    this.bytes = bytes;
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
  return (await commitActGroup(tx, acts)).outcomes;
}

/** What a group of acts committed: each act's outcome, and the receipts log's head when the group appended receipts. */
export interface GroupCommitted {
  outcomes: ActOutcome[];
  /** The head the group left the receipts log at, under this transaction's lock (undefined when it appended none). */
  receiptsHead: Edge | undefined;
}

/** commitActs, with the receipts log's head it wrote (the batch's seal signs it without reading it again). */
export async function commitActGroup(tx: Transaction, acts: ReadonlyArray<ActPlan<unknown>>): Promise<GroupCommitted> {
  const now = new Date();
  const fuseIds = new Set<string>();
  const keyIds = new Set<string>();
  for (const a of acts) {
    if (a.needs.fuseId) fuseIds.add(a.needs.fuseId);
    if (a.needs.hopOf) keyIds.add(a.needs.hopOf);
    if (a.needs.spendOf) keyIds.add(a.needs.spendOf);
  }
  // The receipts log's head first: batches of several processes on one database serialise on its
  // row lock, so the state read after it (fuses, quotas, rows) is what the batches before left.
  // Sent together in that order (sql.ts): the server runs them in order, in one round trip.
  const [before, fuses, { keys: quotas, accountCaps }, rows, testBefore] = await allSent([
    lockEdge(tx, RECEIPTS_LOG),
    getFuses(tx, fuseIds),
    readHopQuotas(tx, keyIds, now),
    readGroupRows(tx, acts),
    // The test log's head only for a group that holds a test act: a live group reads nothing more.
    acts.some((a) => a.needs.test) ? lockEdge(tx, TEST_RECEIPTS_LOG) : undefined,
  ]);
  // Set once a `run` act's statement changes a row: the group's reads may then be stale.
  const changes = { seen: false };
  // Rows the acts so far recorded (setRow): written with the group's records, so no read would see them yet.
  const recorded = new RowOverlay();

  const outcomes: ActOutcome[] = [];
  const receipts: Receipt[] = [];
  const testReceipts: Receipt[] = [];
  const appends = new GroupAppends(tx);
  // Each receipt's entry, made once when it is minted (an amended copy is made again when written).
  const leaves = new WeakMap<Receipt, Buffer>();
  const decided: ActWrites[] = [];
  const atEnd: Array<(group: GroupEnd) => void> = [];
  for (const act of acts) {
    let minted: Receipt | undefined;
    // Counts the receipt's charges against its key's spend caps, once the act has succeeded.
    let spend: (() => void) | undefined;
    const ending: Array<(group: GroupEnd) => void> = [];
    const state: ActState = {
      fuse: act.needs.fuseId ? fuses.get(act.needs.fuseId) : undefined,
      receipt(issuer, input, opts = {}) {
        if (minted) throw new Error('an act has at most one receipt');
        // Openings are kept for the receipt's key's account, listed with its receipts (key-receipts.ts).
        if (opts.openings?.length && !input.key_id) throw new Error('a receipt keeps openings only for its key');
        const test = act.needs.test === true;
        const charged = withCharges(test ? { ...input, test: true } : input, opts.charges);
        const caps = input.key_id && !test ? quotas.get(input.key_id)?.spend : undefined;
        if (caps && charged.charges)
          spend = checkSpend(
            caps,
            input.key_id!,
            charged.charges.reduce((sum, c) => sum + BigInt(c.amount_micros), 0n),
          );
        const index = test ? testBefore!.size + testReceipts.length : before.size + receipts.length;
        const receipt = mintReceipt(issuer, index, charged, opts.signed, now);
        if (opts.openings?.length) receipt.openings = opts.openings;
        const leaf = Buffer.from(receiptLeaf(receipt), 'utf8');
        if (leaf.length > MAX_ENTRY_BYTES) throw new ReceiptTooLarge(leaf.length);
        leaves.set(receipt, leaf);
        minted = receipt;
        return minted;
      },
      append: (log, leaf) => appends.append(log, leaf),
      atGroupEnd: (then) => void ending.push(then),
      async row<V>(reader: GroupReader<V>, key: string) {
        if (recorded.has(reader, key)) return recorded.get(reader, key) as V;
        const read = rows.get(reader);
        if (read?.keys.has(key) && !changes.seen) return read.rows.get(key) as V | undefined;
        return (await reader.read(tx, [key])).get(key);
      },
      setRow: (reader, key, value) => recorded.set(reader, key, value),
    };
    const appended = appends.mark();
    const rowsMark = recorded.mark();
    // Checked last, so that an act refused for another reason (an unknown fuse) spends no hop.
    const take = () => (act.needs.hopOf ? takeHop(quotas, act.needs.hopOf) : undefined);
    try {
      let d: Decided<unknown>;
      if (act.run) {
        d = await runAlone(tx, changes, async (actTx) => {
          const r = await act.run(actTx, state);
          take();
          return r;
        });
      } else {
        d = act.decide(state);
        take();
      }
      // The receipt written is the one minted, or an amended copy of it (an x402-paid act names its payment in it).
      const written = d.writes.receipt;
      if (written?.receipt_id !== minted?.receipt_id || written?.log_index !== minted?.log_index)
        throw new Error('an act writes the receipt it minted, and only that one');
      if (d.writes.fuse) fuses.set(d.writes.fuse.id, d.writes.fuse);
      if (written) (written.log === TEST_RECEIPTS_LOG ? testReceipts : receipts).push(written);
      spend?.();
      decided.push(d.writes);
      atEnd.push(...ending);
      outcomes.push({ ok: true, value: d.result });
    } catch (error) {
      appends.undo(appended);
      recorded.undo(rowsMark);
      outcomes.push({ ok: false, error });
    }
  }
  // Proofs come from the group's edges in memory, so its ends run first: they may complete the answers stored below.
  for (const then of atEnd) then(appends);
  // The writes touch different tables and depend on no answer of each other: sent together (sql.ts).
  const leafOf = (r: Receipt) => leaves.get(r) ?? Buffer.from(receiptLeaf(r), 'utf8');
  const [receiptsHead] = await allSent([
    writeReceipts(tx, before, receipts, leafOf),
    writeTestReceipts(tx, testBefore, testReceipts, leafOf),
    appends.write(),
    writeHopCounts(tx, [...quotas.values()], now),
    writeRecords(tx, [...decided.flatMap((a) => a.records ?? []), ...spendAlerts(cappedStates(quotas, accountCaps), now)]),
    ...decided.flatMap((a) => (a.answer ? [storeAnswer(tx, a.answer)] : [])),
  ]);
  return { outcomes, receiptsHead };
}

/** Each reader's declared rows for the group, read with one call per reader. */
async function readGroupRows(
  tx: Transaction,
  acts: ReadonlyArray<ActPlan<unknown>>,
): Promise<Map<GroupReader<unknown>, { keys: Set<string>; rows: Map<string, unknown> }>> {
  const keysOf = new Map<GroupReader<unknown>, Set<string>>();
  for (const a of acts) {
    for (const { reader, key } of a.needs.rows ?? []) {
      let keys = keysOf.get(reader);
      if (!keys) keysOf.set(reader, (keys = new Set()));
      keys.add(key);
    }
  }
  const out = new Map<GroupReader<unknown>, { keys: Set<string>; rows: Map<string, unknown> }>();
  for (const [reader, keys] of keysOf) out.set(reader, { keys, rows: await reader.read(tx, [...keys]) });
  return out;
}

/** Every cap the group's keys read: each key's own, and each account's once. */
function* cappedStates(quotas: Map<string, HopQuota>, accountCaps: Map<string, CapState>): Iterable<CapState> {
  for (const q of quotas.values()) if (q.spend?.key) yield q.spend.key;
  yield* accountCaps.values();
}

function takeHop(quotas: Map<string, HopQuota>, keyId: string): void {
  const q = quotas.get(keyId);
  if (!q) throw new KeyRevoked(keyId);
  if (q.used + q.added >= q.hopLimit) throw new HopLimitReached(keyId, q.hopLimit);
  q.added++;
}

/** The receipt input with its charges, each within the bound of one charge and charged to the receipt's key. */
function withCharges(input: ReceiptInput, charges: readonly ActCharge[] | undefined): ReceiptInput {
  if (!charges?.length) return input;
  for (const c of charges) {
    checkCharge(c);
    if (c.keyId !== input.key_id)
      throw new Error(`a receipt states the charges of its own key (${input.key_id ?? 'none'}), not of ${c.keyId}`);
  }
  return {
    ...input,
    charges: charges.map((c) => ({ sku: c.sku, amount_micros: Number(c.amountMicros), ...(c.nap ? { nap: true } : {}) })),
  };
}

/**
 * The group's receipts, in index order: appended to the log (each segment
 * with the summary a clearing period sums), added to the usage counters, and
 * listed per key. Returns the log's head after them.
 */
async function writeReceipts(
  tx: Transaction,
  before: Edge,
  receipts: readonly Receipt[],
  leafOf: (r: Receipt) => Buffer,
): Promise<Edge | undefined> {
  if (receipts.length === 0) return undefined;
  const [appended] = await allSent([
    appendLeaves(tx, RECEIPTS_LOG, receipts.map(leafOf), {
      before,
      summarize: (_entries, start) => summarizeReceipts(receipts.slice(start - before.size, start - before.size + _entries.length)),
    }),
    addToCounters(tx, receipts),
    addKeyReceipts(tx, receipts),
  ]);
  return appended.after;
}

/**
 * A group's test receipts (docs/test-mode.md): appended to the test log and
 * listed per key, never added to the usage counters, and with no summary a
 * clearing period would sum: nothing of them is billed.
 */
async function writeTestReceipts(
  tx: Transaction,
  before: Edge | undefined,
  receipts: readonly Receipt[],
  leafOf: (r: Receipt) => Buffer,
): Promise<void> {
  if (receipts.length === 0) return;
  await allSent([appendLeaves(tx, TEST_RECEIPTS_LOG, receipts.map(leafOf), { before }), addKeyReceipts(tx, receipts)]);
}

/**
 * What a clearing period sums over a segment of the receipts log: acts per
 * "kind decision", and per SKU [count, micro-USD as decimal text, nap].
 */
export interface SegmentSummary {
  acts: Record<string, number>;
  skus: Record<string, [number, string, boolean]>;
}

export function summarizeReceipts(receipts: ReadonlyArray<Pick<Receipt, 'payload'>>): string {
  const s: SegmentSummary = { acts: {}, skus: {} };
  for (const { payload } of receipts) {
    const act = `${payload.kind} ${payload.decision}`;
    s.acts[act] = (s.acts[act] ?? 0) + 1;
    for (const c of payload.charges ?? []) {
      const prev = s.skus[c.sku] ?? [0, '0', false];
      s.skus[c.sku] = [prev[0] + 1, String(BigInt(prev[1]) + BigInt(c.amount_micros)), prev[2] || c.nap === true];
    }
  }
  return JSON.stringify(s);
}

/** The rows a group's acts recorded (`setRow`), with what each replaced, so that a failed act's are undone. */
class RowOverlay {
  readonly #rows = new Map<GroupReader<unknown>, Map<string, unknown>>();
  readonly #log: Array<{ reader: GroupReader<unknown>; key: string; had: boolean; was: unknown }> = [];

  has(reader: GroupReader<unknown>, key: string): boolean {
    return this.#rows.get(reader)?.has(key) ?? false;
  }

  get(reader: GroupReader<unknown>, key: string): unknown {
    return this.#rows.get(reader)?.get(key);
  }

  set(reader: GroupReader<unknown>, key: string, value: unknown): void {
    let rows = this.#rows.get(reader);
    if (!rows) this.#rows.set(reader, (rows = new Map()));
    this.#log.push({ reader, key, had: rows.has(key), was: rows.get(key) });
    rows.set(key, value);
  }

  mark(): number {
    return this.#log.length;
  }

  undo(to: number): void {
    while (this.#log.length > to) {
      const { reader, key, had, was } = this.#log.pop()!;
      const rows = this.#rows.get(reader)!;
      if (had) rows.set(key, was);
      else rows.delete(key);
    }
  }
}

type AppendMark = ReadonlyMap<string, number>;
/** The mark of a group that has appended nothing yet (most groups: hops append only receipts). */
const NOTHING_APPENDED: AppendMark = new Map();

/** The entries a group's acts appended to logs other than the receipts log, written together at its end. */
class GroupAppends implements GroupEnd {
  readonly #tx: Transaction;
  /** Per log: the entries appended so far, each hashed into the log's edge as it came (log.ts PendingAppend). */
  readonly #logs = new Map<string, PendingAppend>();
  /** Per log, once the group has ended: its root, and its subtree hashes, shared by the proofs of its entries. */
  readonly #ended = new Map<string, { root: Hash; appended: HashReader }>();

  constructor(tx: Transaction) {
    this.#tx = tx;
  }

  async append(log: string, leaf: Uint8Array): Promise<Appended> {
    if (log === RECEIPTS_LOG) throw new Error('receipts are appended by minting them (state.receipt)');
    let l = this.#logs.get(log);
    if (!l) {
      const before = await lockEdge(this.#tx, log);
      l = this.#logs.get(log) ?? new PendingAppend(before);
      this.#logs.set(log, l);
    }
    return l.add(leaf);
  }

  /** Where every log stands now: what an act that fails is undone to. */
  mark(): AppendMark {
    if (this.#logs.size === 0) return NOTHING_APPENDED;
    return new Map([...this.#logs].map(([log, l]) => [log, l.leaves.length]));
  }

  undo(to: AppendMark): void {
    for (const [log, l] of this.#logs) {
      const count = to.get(log);
      if (count === undefined) this.#logs.delete(log);
      else l.truncate(count);
    }
  }

  async write(): Promise<void> {
    await allSent([...this.#logs].map(([log, l]) => writeAppend(this.#tx, log, l)));
  }

  /** Only once the group's acts have all run: until then its edges still move, and the memo would go stale. */
  inclusion(log: string, index: number): Inclusion {
    const l = this.#logs.get(log);
    const i = l ? index - l.before.size : -1;
    if (!l || i < 0 || i >= l.leafHashes.length) throw new Error(`the group appended no entry ${index} to ${log}`);
    let ended = this.#ended.get(log);
    if (!ended) this.#ended.set(log, (ended = { root: edgeRoot(l.edge)!, appended: leafHashReader(l.leafHashes, l.before.size) }));
    const hashes = inclusionFrom(l.edges[i]!, l.edge.size, ended.appended);
    return { index, size: l.edge.size, leafHash: l.leafHashes[i]!, hashes, root: ended.root };
  }
}

/**
 * Runs one `run` act in a savepoint of its own, opened before its first
 * statement: an act that sends none (a refusal decided on the group's rows)
 * has nothing to undo and costs no savepoint. Any statement that changes a
 * row is noted in `changes` (the group's reads may then be stale).
 */
async function runAlone<T>(tx: Transaction, changes: { seen: boolean }, run: (actTx: Transaction) => Promise<T>): Promise<T> {
  let savepoint: Promise<unknown> | undefined;
  let open = false;
  const opened = () => (savepoint ??= tx.execute('SAVEPOINT act').then(() => (open = true)));
  const actTx: Transaction = {
    dialect: tx.dialect,
    async execute(stmt) {
      await opened();
      const rs = await tx.execute(stmt);
      if (rs.rowsAffected > 0) changes.seen = true;
      return rs;
    },
    close: () => tx.close(),
  };
  try {
    const out = await run(actTx);
    if (open) await tx.execute('RELEASE act');
    return out;
  } catch (e) {
    if (open) {
      await tx.execute('ROLLBACK TO act');
      await tx.execute('RELEASE act');
    }
    throw e;
  }
}

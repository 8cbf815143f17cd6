/**
 * The Merkle log engine shared by every append-only log (receipts, astl,
 * triggers, clearing), stored as C2SP tlog-tiles (crypto/tiles.ts) and written
 * once per batch, never per entry:
 *
 *   logs             one row per log: its size and its right edge (the hashes
 *                    of its perfect subtrees, all an append needs to read);
 *   log_segments     one row per append and level-0 tile it touches: the
 *                    appended entries as a C2SP bundle fragment, plus an
 *                    optional summary of them (receipts: acts and charges);
 *   log_tile_hashes  one row per completed node of height 8, 16, 24...: the
 *                    hashes of every tile above level 0.
 *
 * A level-0 tile is the leaf hashes of its bundle; every other node is folded
 * from at most 128 stored hashes of the tile level below it (as Go's tlog does
 * behind one HashReader). So tree heads, proofs and tiles are all computed
 * from the same rows, and nothing is ever stored twice.
 *
 * Appends happen inside the caller's write transaction (`ledger.write`), so a
 * leaf commits together with the act it records, and appends queued together
 * commit together (group commit). The index is read and advanced under
 * SQLite's write lock: no gap, no duplicate, even with several processes.
 */
import { allSent, insertRows, type Client, type Transaction } from './sql.ts';
import type { InValue } from '@libsql/client';
import {
  emptyRoot,
  leafHash,
  nodeHash,
  proveConsistency,
  proveInclusion,
  rangeNodes,
  foldRange,
  type Hash,
  type LeafRange,
  type NodeId,
} from '../crypto/merkle.ts';
import {
  TILE_HEIGHT,
  TILE_WIDTH,
  decodeBundle,
  edgeRoot,
  encodeBundle,
  extendEdge,
  lastLeafProof,
  packEdge,
  tileWidth,
  unpackEdge,
  type Edge,
} from '../crypto/tiles.ts';
import { nowIso } from '../ids.ts';

export type Db = Client | Transaction;

export class UnknownLogError extends Error {
  override name = 'UnknownLogError';
}

export class LogRangeError extends Error {
  override name = 'LogRangeError';
}

const bytes = (v: unknown): Uint8Array => new Uint8Array(v as ArrayBuffer);

/** The log's size and right edge; throws UnknownLogError for a log that does not exist. */
export function readEdge(db: Db, log: string): Promise<Edge> {
  return edgeOf(db, log, '');
}

/**
 * The log's edge read to be moved, inside a write transaction: its row stays
 * locked until the transaction ends (the driver's `forUpdate`), so that batches
 * of several processes on one database take indexes one after the other, with
 * no gap and no duplicate. On the embedded file the write lock already covers it.
 */
export function lockEdge(tx: Transaction, log: string): Promise<Edge> {
  return edgeOf(tx, log, tx.dialect.forUpdate);
}

async function edgeOf(db: Db, log: string, lock: string): Promise<Edge> {
  const rs = await db.execute({ sql: `SELECT size, edge FROM logs WHERE name = ?${lock}`, args: [log] });
  const r = rs.rows[0];
  if (!r) throw new UnknownLogError(`no log named ${log}`);
  return unpackEdge(Number(r.size), r.edge == null ? null : bytes(r.edge));
}

/** Current size of a log; throws UnknownLogError for a log that does not exist. */
export async function logSize(db: Db, log: string): Promise<number> {
  const rs = await db.execute({ sql: 'SELECT size FROM logs WHERE name = ?', args: [log] });
  if (!rs.rows[0]) throw new UnknownLogError(`no log named ${log}`);
  return Number(rs.rows[0].size);
}

/** The public logs: a name with a '/' is a private log (an inference session's), not listed. */
export async function listLogs(db: Db): Promise<Array<{ name: string; size: number }>> {
  const rs = await db.execute("SELECT name, size FROM logs WHERE name NOT LIKE '%/%' ORDER BY name");
  return rs.rows.map((r) => ({ name: String(r.name), size: Number(r.size) }));
}

/** Creates a log if it does not exist (inside a write transaction). */
export async function ensureLog(tx: Transaction, log: string): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO logs (name, size, created_at) VALUES (?, 0, ?) ON CONFLICT (name) DO NOTHING',
    args: [log, nowIso()],
  });
}

/** An entry's RFC 9162 inclusion proof in the tree of `size` leaves, whose root is `root`. */
export interface Inclusion {
  index: number;
  size: number;
  leafHash: Hash;
  hashes: Hash[];
  root: Hash;
}

/**
 * Appends one leaf inside the caller's write transaction.
 * @example await ledger.write((tx) => appendLeaf(tx, 'astl', bytes))
 */
export async function appendLeaf(tx: Transaction, log: string, leaf: Uint8Array): Promise<Inclusion> {
  const { leafHashes, before, after } = await appendLeaves(tx, log, [leaf]);
  return appendedAt(before, leafHashes[0]!, after);
}

/**
 * The leaf `lh` just appended, taking a log from `before` to `after`: its
 * inclusion proof in the tree it ended (size index + 1) and that tree's root.
 * Both come from the right edge the append read anyway, so an answer that
 * proves a fresh leaf costs no read.
 */
function appendedAt(before: Edge, lh: Hash, after: Edge): Inclusion {
  return { index: before.size, size: after.size, leafHash: lh, hashes: lastLeafProof(before), root: edgeRoot(after)! };
}

export interface AppendOptions {
  /** The log's edge as the caller already read it under this write lock (saves the read). */
  before?: Edge | undefined;
  /** A summary of each segment's entries, stored beside them (receipts: what the clearing sums). */
  summarize?: ((entries: readonly Uint8Array[], start: number) => string) | undefined;
}

/**
 * Leaves appended to a log's edge in memory, before they are written: each
 * leaf's RFC 9162 hash, the edge before it, and the tile-level nodes it
 * completed. A leaf is hashed and folded into the edge once, when it is added;
 * `writeAppend` stores what was computed. `truncate` drops the leaves added
 * after a point (an act of a group that failed).
 */
export class PendingAppend {
  readonly before: Edge;
  #edge: Edge;
  readonly #leaves: Uint8Array[] = [];
  readonly #leafHashes: Hash[] = [];
  /** The edge before each leaf. */
  readonly #edges: Edge[] = [];
  /** Completed nodes of a tile level above 0: [tile level, index, hash, the leaf count when completed]. */
  readonly #tileNodes: Array<[number, number, Hash, number]> = [];

  constructor(before: Edge) {
    this.before = before;
    this.#edge = before;
  }

  /** The edge after the leaves added so far. */
  get edge(): Edge {
    return this.#edge;
  }

  get leaves(): readonly Uint8Array[] {
    return this.#leaves;
  }

  get leafHashes(): readonly Hash[] {
    return this.#leafHashes;
  }

  /** The edge before each leaf. */
  get edges(): readonly Edge[] {
    return this.#edges;
  }

  /** The completed nodes of tile levels above 0, as [tile level, index, hash]. */
  get tileNodes(): ReadonlyArray<readonly [number, number, Hash]> {
    return this.#tileNodes.map(([level, index, hash]) => [level, index, hash] as const);
  }

  /** The index the leaf gets and its hash. */
  add(leaf: Uint8Array): { index: number; leafHash: Hash } {
    const lh = leafHash(leaf);
    const at = this.#edge;
    const next = extendEdge(at, lh);
    for (const c of next.completed)
      if (c.level % TILE_HEIGHT === 0) this.#tileNodes.push([c.level / TILE_HEIGHT, c.index, c.hash, this.#leaves.length + 1]);
    this.#edge = next.edge;
    this.#leaves.push(leaf);
    this.#leafHashes.push(lh);
    this.#edges.push(at);
    return { index: at.size, leafHash: lh };
  }

  /** Keeps the first `count` leaves added. */
  truncate(count: number): void {
    if (count >= this.#leaves.length) return;
    this.#edge = this.#edges[count]!;
    this.#leaves.length = count;
    this.#leafHashes.length = count;
    this.#edges.length = count;
    while (this.#tileNodes.length > 0 && this.#tileNodes.at(-1)![3] > count) this.#tileNodes.pop();
  }
}

/**
 * Appends `leaves`, in order, with a constant number of statements whatever
 * their count (writeAppend).
 * @returns the first leaf's index, every leaf's RFC 9162 hash, and the edge before and after.
 */
export async function appendLeaves(
  tx: Transaction,
  log: string,
  leaves: readonly Uint8Array[],
  opts: AppendOptions = {},
): Promise<{ first: number; leafHashes: readonly Hash[]; before: Edge; after: Edge }> {
  const pending = new PendingAppend(opts.before ?? (await lockEdge(tx, log)));
  for (const leaf of leaves) pending.add(leaf);
  await writeAppend(tx, log, pending, opts.summarize);
  return { first: pending.before.size, leafHashes: pending.leafHashes, before: pending.before, after: pending.edge };
}

/**
 * Writes what `pending` appended: one update of the log's row (size and edge,
 * guarded by the size it was read at), one row per level-0 tile touched, one
 * row per completed node of a tile level above 0 (one per 256 leaves).
 */
export async function writeAppend(
  tx: Transaction,
  log: string,
  pending: PendingAppend,
  summarize?: AppendOptions['summarize'],
): Promise<void> {
  const { leaves, edge } = pending;
  if (leaves.length === 0) return;
  const first = pending.before.size;
  const now = nowIso();
  const segments: InValue[][] = [];
  for (let at = 0; at < leaves.length;) {
    const start = first + at;
    const count = Math.min(leaves.length - at, TILE_WIDTH - (start % TILE_WIDTH));
    const chunk = leaves.slice(at, at + count);
    segments.push([log, start, count, encodeBundle(chunk), summarize ? summarize(chunk, start) : null, now]);
    at += count;
  }
  // The head's update and the inserts are sent together (sql.ts); the update is checked once all have answered.
  const [moved] = await allSent([
    tx.execute({ sql: 'UPDATE logs SET size = ?, edge = ? WHERE name = ? AND size = ?', args: [edge.size, packEdge(edge), log, first] }),
    insertRows(tx, 'log_segments', ['log', 'start', 'count', 'entries', 'summary', 'created_at'], segments),
    insertRows(
      tx,
      'log_tile_hashes',
      ['log', 'level', 'idx', 'hash'],
      pending.tileNodes.map(([level, idx, hash]) => [log, level, idx, hash]),
    ),
  ]);
  // The size is read and written under one lock (lockEdge), so this only fails when `before` was stale: a bug, never a race.
  if (moved.rowsAffected !== 1)
    throw new Error(`log ${log} is no longer at size ${first}: appends must read its edge under the same write lock`);
}

// ---------------------------------------------------------------- entries

export interface LogEntry {
  index: number;
  leaf: Uint8Array;
  created_at: string;
}

/** The segments holding entries [lo, hi), in order, as entries (a segment never spans two tiles). */
async function entriesIn(db: Db, log: string, lo: number, hi: number): Promise<LogEntry[]> {
  const rs = await db.execute({
    sql: 'SELECT start, entries, created_at FROM log_segments WHERE log = ? AND start > ? AND start < ? ORDER BY start',
    args: [log, lo - TILE_WIDTH, hi],
  });
  const out: LogEntry[] = [];
  for (const r of rs.rows) {
    const start = Number(r.start);
    decodeBundle(bytes(r.entries)).forEach((leaf, k) => {
      const index = start + k;
      if (index >= lo && index < hi) out.push({ index, leaf, created_at: String(r.created_at) });
    });
  }
  return out;
}

/** Entries [start, start + limit) that exist. */
export async function readEntries(db: Db, log: string, start: number, limit: number): Promise<LogEntry[]> {
  const size = await logSize(db, log);
  return entriesIn(db, log, start, Math.min(size, start + limit));
}

/** The entries at `indexes` that exist, in the order asked, reading each tile they fall in once. */
export async function readEntriesAt(db: Db, log: string, indexes: readonly number[]): Promise<LogEntry[]> {
  const byTile = new Map<number, LogEntry[]>();
  for (const t of new Set(indexes.map((i) => Math.floor(i / TILE_WIDTH)))) {
    byTile.set(t, await entriesIn(db, log, t * TILE_WIDTH, (t + 1) * TILE_WIDTH));
  }
  return indexes.flatMap((i) => byTile.get(Math.floor(i / TILE_WIDTH))!.filter((e) => e.index === i));
}

export async function readEntry(db: Db, log: string, index: number): Promise<LogEntry | undefined> {
  return (await entriesIn(db, log, index, index + 1))[0];
}

/** The stored summaries of the segments of [from, to), which must both be batch boundaries (a clearing period). */
export async function segmentSummaries(db: Db, log: string, from: number, to: number): Promise<string[]> {
  const rs = await db.execute({
    sql: 'SELECT summary FROM log_segments WHERE log = ? AND start >= ? AND start < ? ORDER BY start',
    args: [log, from, to],
  });
  return rs.rows.flatMap((r) => (r.summary == null ? [] : [String(r.summary)]));
}

/** When entry 0 was appended (undefined for an empty log). */
export async function firstAppendAt(db: Db, log: string): Promise<string | undefined> {
  const rs = await db.execute({ sql: 'SELECT created_at FROM log_segments WHERE log = ? ORDER BY start LIMIT 1', args: [log] });
  return rs.rows[0] ? String(rs.rows[0].created_at) : undefined;
}

// ---------------------------------------------------------------- hashes from tiles

/**
 * The hashes of `nodes` (each a perfect subtree inside the tree), in order, in
 * a few queries: a node of height 8k + r is folded from its 2^r descendants of
 * height 8k, read from the bundle (k = 0: leaf hashes) or from log_tile_hashes.
 */
export async function readNodeHashes(db: Db, log: string, nodes: readonly NodeId[]): Promise<Hash[]> {
  const leafRanges: LeafRange[] = [];
  const storedWanted = new Map<number, Set<number>>();
  for (const n of nodes) {
    const base = n.level - (n.level % TILE_HEIGHT);
    const span = 2 ** (n.level - base);
    if (base === 0) leafRanges.push({ lo: n.index * span, hi: (n.index + 1) * span });
    else {
      const set = storedWanted.get(base / TILE_HEIGHT) ?? new Set<number>();
      for (let i = n.index * span; i < (n.index + 1) * span; i++) set.add(i);
      storedWanted.set(base / TILE_HEIGHT, set);
    }
  }
  const leaves = new Map<number, Hash>();
  for (const t of new Set(leafRanges.flatMap((r) => tilesOf(r)))) {
    for (const e of await entriesIn(db, log, t * TILE_WIDTH, (t + 1) * TILE_WIDTH)) leaves.set(e.index, leafHash(e.leaf));
  }
  const stored = new Map<string, Hash>();
  for (const [level, set] of storedWanted) {
    const idx = db.dialect.oneOf('idx', [...set]);
    const rs = await db.execute({
      sql: `SELECT idx, hash FROM log_tile_hashes WHERE log = ? AND level = ? AND ${idx.sql}`,
      args: [log, level, ...idx.args],
    });
    for (const r of rs.rows) stored.set(`${level}/${Number(r.idx)}`, bytes(r.hash));
  }
  return nodes.map((n) => {
    const base = n.level - (n.level % TILE_HEIGHT);
    const span = 2 ** (n.level - base);
    const row: Hash[] = [];
    for (let i = n.index * span; i < (n.index + 1) * span; i++) {
      const h = base === 0 ? leaves.get(i) : stored.get(`${base / TILE_HEIGHT}/${i}`);
      if (!h) throw new Error(`log ${log} is missing the hash of node ${base}/${i}`);
      row.push(h);
    }
    while (row.length > 1) {
      for (let k = 0; k < row.length / 2; k++) row[k] = nodeHash(row[2 * k]!, row[2 * k + 1]!);
      row.length /= 2;
    }
    return row[0]!;
  });
}

const tilesOf = (r: LeafRange): number[] => {
  const out: number[] = [];
  for (let t = Math.floor(r.lo / TILE_WIDTH); t * TILE_WIDTH < r.hi; t++) out.push(t);
  return out;
};

/** The subtree hashes (MTH) of `ranges`, each folded from its perfect subtrees. */
async function rangeHashes(db: Db, log: string, ranges: readonly LeafRange[]): Promise<Hash[]> {
  const plans = ranges.map((r) => rangeNodes(r.lo, r.hi));
  const hashes = await readNodeHashes(db, log, plans.flat());
  let at = 0;
  return plans.map((plan) => foldRange(hashes.slice(at, (at += plan.length))));
}

function checkSize(size: number, current: number, what: string): void {
  if (!Number.isInteger(size) || size < 0) throw new LogRangeError(`${what} must be a non-negative integer`);
  if (size > current) throw new LogRangeError(`${what} ${size} is beyond the tree size ${current}`);
}

/** The root hash of the log at `size` (default: its current size, folded from its edge). */
export async function treeHead(db: Db, log: string, size?: number): Promise<{ size: number; root: Hash }> {
  const edge = await readEdge(db, log);
  const n = size ?? edge.size;
  checkSize(n, edge.size, 'tree_size');
  if (n === edge.size) return { size: n, root: edgeRoot(edge) ?? emptyRoot() };
  if (n === 0) return { size: 0, root: emptyRoot() };
  const [root] = await rangeHashes(db, log, [{ lo: 0, hi: n }]);
  return { size: n, root: root! };
}

/** Inclusion proof (RFC 9162 §2.1.3) of leaf `index` in the tree of size `size`. */
export async function inclusionProof(db: Db, log: string, index: number, size: number): Promise<{ leafHash: Hash; hashes: Hash[] }> {
  const current = await logSize(db, log);
  checkSize(size, current, 'tree_size');
  if (!Number.isInteger(index) || index < 0 || index >= size) {
    throw new LogRangeError(`index ${index} is not in a tree of size ${size}`);
  }
  const [leaf, ...hashes] = await rangeHashes(db, log, [{ lo: index, hi: index + 1 }, ...proveInclusion(index, size)]);
  return { leafHash: leaf!, hashes };
}

/** Consistency proof (RFC 9162 §2.1.4) from size `from` to size `to`. */
export async function consistencyProof(db: Db, log: string, from: number, to: number): Promise<Hash[]> {
  const current = await logSize(db, log);
  checkSize(to, current, 'to');
  if (!Number.isInteger(from) || from < 1 || from > to) throw new LogRangeError('from must be an integer with 1 <= from <= to');
  return rangeHashes(db, log, proveConsistency(from, to));
}

// ---------------------------------------------------------------- tiles as served

/**
 * The bytes of hash tile `n` at `level` with `width` hashes, or undefined when
 * the log does not have that many nodes there yet. A tile of a given width
 * never changes once it exists.
 */
export async function readHashTile(db: Db, log: string, level: number, n: number, width: number): Promise<Buffer | undefined> {
  const size = await logSize(db, log);
  if (tileWidth(level, n, size) < width) return undefined;
  const lo = n * TILE_WIDTH;
  if (level === 0) return Buffer.concat((await entriesIn(db, log, lo, lo + width)).map((e) => leafHash(e.leaf)));
  const rs = await db.execute({
    sql: 'SELECT hash FROM log_tile_hashes WHERE log = ? AND level = ? AND idx >= ? AND idx < ? ORDER BY idx',
    args: [log, level, lo, lo + width],
  });
  if (rs.rows.length !== width) throw new Error(`log ${log} is missing hashes of tile ${level}/${n}`);
  return Buffer.concat(rs.rows.map((r) => bytes(r.hash)));
}

/** The bytes of entry bundle `n` with `width` entries, or undefined when the log is not that long yet. */
export async function readBundle(db: Db, log: string, n: number, width: number): Promise<Uint8Array | undefined> {
  const size = await logSize(db, log);
  if (tileWidth(0, n, size) < width) return undefined;
  const lo = n * TILE_WIDTH;
  return encodeBundle((await entriesIn(db, log, lo, lo + width)).map((e) => e.leaf));
}

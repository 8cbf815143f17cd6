/**
 * The Merkle log engine shared by every append-only log (receipts, astl,
 * triggers, clearing). RFC 9162 trees (src/crypto/merkle.ts) stored as the
 * leaf bytes plus every perfect subtree hash, so that a tree head or a proof
 * for any size reads O(log n) stored hashes and nothing is ever rehashed.
 *
 * Appends happen inside the caller's write transaction (`ledger.write`), so a
 * leaf commits together with the act it records, and appends queued together
 * commit together (group commit). The index is read and advanced inside that
 * transaction, under SQLite's write lock: no gap, no duplicate, even with
 * several processes on one database.
 */
import type { Client, Transaction } from './sql.ts';
import type { InArgs, InValue } from '@libsql/client';
import {
  emptyRoot,
  foldRange,
  leafHash,
  nodeHash,
  proveConsistency,
  proveInclusion,
  rangeNodes,
  type Hash,
  type LeafRange,
  type NodeId,
} from '../crypto/merkle.ts';
import { nowIso } from '../ids.ts';

export type Db = Client | Transaction;

export class UnknownLogError extends Error {
  override name = 'UnknownLogError';
}

export class LogRangeError extends Error {
  override name = 'LogRangeError';
}

const toHash = (v: unknown): Hash => new Uint8Array(v as ArrayBuffer);

/** Current size of a log; throws UnknownLogError for a log that does not exist. */
export async function logSize(db: Db, log: string): Promise<number> {
  const rs = await db.execute({ sql: 'SELECT size FROM logs WHERE name = ?', args: [log] });
  if (!rs.rows[0]) throw new UnknownLogError(`no log named ${log}`);
  return Number(rs.rows[0].size);
}

/** The public logs: a name with a '/' is a private log (an inference session's), not listed. */
export async function listLogs(db: Db): Promise<Array<{ name: string; size: number }>> {
  const rs = await db.execute("SELECT name, size FROM logs WHERE instr(name, '/') = 0 ORDER BY name");
  return rs.rows.map((r) => ({ name: String(r.name), size: Number(r.size) }));
}

/** Creates a log if it does not exist (inside a write transaction). */
export async function ensureLog(tx: Transaction, log: string): Promise<void> {
  await tx.execute({ sql: 'INSERT OR IGNORE INTO logs (name, size, created_at) VALUES (?, 0, ?)', args: [log, nowIso()] });
}

/**
 * Appends one leaf inside the caller's write transaction.
 * @returns the leaf's index, its RFC 9162 leaf hash, and its inclusion proof and root in the tree it ends (`Appended`).
 * @example await ledger.write((tx) => appendLeaf(tx, 'astl', bytes))
 */
export async function appendLeaf(tx: Transaction, log: string, leaf: Uint8Array): Promise<Appended> {
  const { first, leafHashes, edge } = await appendLeaves(tx, log, [leaf]);
  const lh = leafHashes[0]!;
  return { index: first, leafHash: lh, proof: edge, root: edge.reduce((h, sibling) => nodeHash(sibling, h), lh) };
}

/**
 * A leaf just appended, with its RFC 9162 inclusion proof in the tree it ended
 * (size index + 1) and that tree's root. Both come from the right edge the
 * append read anyway: the last leaf's audit path is exactly the perfect
 * subtrees left of it, smallest first, and the root folds them over the leaf.
 * So an answer that proves a fresh leaf costs no further read.
 */
export interface Appended {
  index: number;
  leafHash: Hash;
  proof: Hash[];
  root: Hash;
}

/** Rows per multi-row INSERT: far below SQLite's bound-parameter limit. */
const ROWS_PER_INSERT = 200;

/**
 * Appends `leaves`, in order, with a constant number of statements whatever
 * their count: claim the indexes, read the stored right edge of the tree, hash
 * in memory, insert entries and nodes with multi-row statements.
 * @returns the first leaf's index and every leaf's RFC 9162 hash.
 */
export async function appendLeaves(
  tx: Transaction,
  log: string,
  leaves: readonly Uint8Array[],
): Promise<{ first: number; leafHashes: Hash[]; /** the perfect subtrees of the tree of size `first`, smallest first */ edge: Hash[] }> {
  if (leaves.length === 0) return { first: await logSize(tx, log), leafHashes: [], edge: [] };
  // Claiming the indexes first, under the write lock, is what keeps them gap-free and unique.
  const claimed = await tx.execute({ sql: 'UPDATE logs SET size = size + ? WHERE name = ? RETURNING size', args: [leaves.length, log] });
  if (!claimed.rows[0]) throw new UnknownLogError(`no log named ${log}`);
  const first = Number(claimed.rows[0].size) - leaves.length;
  // A new leaf completes one perfect subtree per trailing 1 bit of its index. Each left
  // half is either made in this append or is one of the stored perfect subtrees on the
  // right edge of the tree of size `first` (one per 1 bit of `first`): read those once.
  const edge = rightEdge(first);
  const edgeHashes = edge.length ? await readNodes(tx, log, edge) : [];
  const known = new Map<string, Hash>(edge.map((n, i) => [`${n.level}/${n.index}`, edgeHashes[i]!]));
  const nodes: Array<[number, number, Hash]> = [];
  const leafHashes = leaves.map((leaf, k) => {
    const lh = leafHash(leaf);
    let h = lh;
    let level = 0;
    let i = first + k;
    nodes.push([0, i, h]);
    known.set(`0/${i}`, h);
    while (i % 2 === 1) {
      h = nodeHash(known.get(`${level}/${i - 1}`)!, h);
      level++;
      i = (i - 1) / 2;
      nodes.push([level, i, h]);
      known.set(`${level}/${i}`, h);
    }
    return lh;
  });
  const now = nowIso();
  await insertRows(tx, 'INSERT INTO log_entries (log, idx, leaf, created_at) VALUES', '(?, ?, ?, ?)', leaves.map((leaf, k) => [log, first + k, leaf, now]));
  await insertRows(tx, 'INSERT INTO log_nodes (log, span_end, level, hash) VALUES', '(?, ?, ?, ?)', nodes.map(([level, idx, hash]) => [log, spanEnd(level, idx), level, hash]));
  return { first, leafHashes, edge: edgeHashes };
}

/** The perfect subtrees that make up a tree of `size` leaves, one per 1 bit of `size`, smallest first. */
function rightEdge(size: number): NodeId[] {
  const out: NodeId[] = [];
  for (let level = 0, n = size; n > 0; level++, n = Math.floor(n / 2)) {
    if (n % 2 === 1) out.push({ level, index: n - 1 });
  }
  return out;
}

/**
 * One multi-row INSERT per ROWS_PER_INSERT rows: `head` ends in VALUES, `tuple`
 * is one row's placeholders, `tail` an optional ON CONFLICT clause.
 */
export async function insertRows(tx: Transaction, head: string, tuple: string, rows: ReadonlyArray<readonly InValue[]>, tail = ''): Promise<void> {
  for (let off = 0; off < rows.length; off += ROWS_PER_INSERT) {
    const chunk = rows.slice(off, off + ROWS_PER_INSERT);
    await tx.execute({ sql: `${head} ${chunk.map(() => tuple).join(', ')}${tail}`, args: chunk.flat() });
  }
}

/**
 * A node's storage key: the leaf index where its span ends (exclusive). Every node an
 * append makes ends inside the appended range, so a group's nodes share one B-tree edge.
 */
export function spanEnd(level: number, index: number): number {
  return (index + 1) * 2 ** level;
}

/** The stored hashes of `ids`, in the same order, in one query. */
async function readNodes(db: Db, log: string, ids: NodeId[]): Promise<Hash[]> {
  const args: InArgs = [log];
  const tuples = ids.map((n) => {
    args.push(spanEnd(n.level, n.index), n.level);
    return '(?, ?)';
  });
  const rs = await db.execute({
    sql: `SELECT span_end, level, hash FROM log_nodes WHERE log = ? AND (span_end, level) IN (VALUES ${tuples.join(', ')})`,
    args,
  });
  const found = new Map(rs.rows.map((r) => [`${Number(r.level)}/${Number(r.span_end)}`, toHash(r.hash)]));
  return ids.map((n) => {
    const h = found.get(`${n.level}/${spanEnd(n.level, n.index)}`);
    if (!h) throw new Error(`log ${log} is missing node ${n.level}/${n.index}`);
    return h;
  });
}

/** Reads the hashes of `ranges` (each folded from its stored perfect subtrees) in one query. */
async function rangeHashes(db: Db, log: string, ranges: LeafRange[]): Promise<Hash[]> {
  const plans = ranges.map((r) => rangeNodes(r.lo, r.hi));
  const wanted = new Map<string, NodeId>();
  for (const plan of plans) for (const n of plan) wanted.set(`${n.level}/${n.index}`, n);
  const ids = [...wanted.values()];
  const found = new Map<string, Hash>();
  // SQLite limits bound parameters; proofs need at most a few hundred nodes.
  for (let off = 0; off < ids.length; off += 200) {
    const chunk = ids.slice(off, off + 200);
    const hashes = await readNodes(db, log, chunk);
    chunk.forEach((n, i) => found.set(`${n.level}/${n.index}`, hashes[i]!));
  }
  return plans.map((plan) => foldRange(plan.map((n) => found.get(`${n.level}/${n.index}`)!)));
}

function checkSize(size: number, current: number, what: string): void {
  if (!Number.isInteger(size) || size < 0) throw new LogRangeError(`${what} must be a non-negative integer`);
  if (size > current) throw new LogRangeError(`${what} ${size} is beyond the tree size ${current}`);
}

/** The root hash of the log at `size` (default: its current size). */
export async function treeHead(db: Db, log: string, size?: number): Promise<{ size: number; root: Hash }> {
  const current = await logSize(db, log);
  const n = size ?? current;
  checkSize(n, current, 'tree_size');
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

export interface LogEntry {
  index: number;
  leaf: Uint8Array;
  created_at: string;
}

/** Entries [start, start + limit) that exist. */
export async function readEntries(db: Db, log: string, start: number, limit: number): Promise<LogEntry[]> {
  await logSize(db, log);
  const rs = await db.execute({
    sql: 'SELECT idx, leaf, created_at FROM log_entries WHERE log = ? AND idx >= ? ORDER BY idx LIMIT ?',
    args: [log, start, limit],
  });
  return rs.rows.map((r) => ({ index: Number(r.idx), leaf: toHash(r.leaf), created_at: String(r.created_at) }));
}

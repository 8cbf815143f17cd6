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
import type { InArgs } from '@libsql/client';
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
 * @returns the leaf's index and its RFC 9162 leaf hash.
 * @example await ledger.write((tx) => appendLeaf(tx, 'astl', bytes))
 */
export async function appendLeaf(tx: Transaction, log: string, leaf: Uint8Array): Promise<{ index: number; leafHash: Hash }> {
  // Claiming the index first, under the write lock, is what keeps indexes gap-free and unique.
  const claimed = await tx.execute({ sql: 'UPDATE logs SET size = size + 1 WHERE name = ? RETURNING size', args: [log] });
  if (!claimed.rows[0]) throw new UnknownLogError(`no log named ${log}`);
  const index = Number(claimed.rows[0].size) - 1;
  const lh = leafHash(leaf);
  // Each completed pair of subtrees makes a new perfect subtree one level up: the new leaf
  // completes one pair per trailing 1 bit of its index, whose left halves are already stored.
  const lefts: NodeId[] = [];
  for (let level = 0, i = index; i % 2 === 1; level++, i = (i - 1) / 2) lefts.push({ level, index: i - 1 });
  const leftHashes = lefts.length ? await readNodes(tx, log, lefts) : [];
  const nodes: Array<[number, number, Hash]> = [[0, index, lh]];
  let h = lh;
  lefts.forEach((left, k) => {
    h = nodeHash(leftHashes[k]!, h);
    nodes.push([left.level + 1, left.index / 2, h]);
  });
  await tx.execute({
    sql: 'INSERT INTO log_entries (log, idx, leaf, created_at) VALUES (?, ?, ?, ?)',
    args: [log, index, leaf, nowIso()],
  });
  await tx.execute({
    sql: `INSERT INTO log_nodes (log, level, idx, hash) VALUES ${nodes.map(() => '(?, ?, ?, ?)').join(', ')}`,
    args: nodes.flatMap(([level, idx, hash]) => [log, level, idx, hash]),
  });
  return { index, leafHash: lh };
}

/** The stored hashes of `ids`, in the same order, in one query. */
async function readNodes(db: Db, log: string, ids: NodeId[]): Promise<Hash[]> {
  const args: InArgs = [log];
  const tuples = ids.map((n) => {
    args.push(n.level, n.index);
    return '(?, ?)';
  });
  const rs = await db.execute({
    sql: `SELECT level, idx, hash FROM log_nodes WHERE log = ? AND (level, idx) IN (VALUES ${tuples.join(', ')})`,
    args,
  });
  const found = new Map(rs.rows.map((r) => [`${Number(r.level)}/${Number(r.idx)}`, toHash(r.hash)]));
  return ids.map((n) => {
    const h = found.get(`${n.level}/${n.index}`);
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

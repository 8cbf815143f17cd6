/**
 * The exclusion tree of each key's redeemed spend leaves: a sparse Merkle
 * tree (src/crypto/sparse-merkle.ts) keyed by SHA-256 of the job id, stored
 * as its non-empty nodes. A redeem adds its job in its own write transaction
 * (`addExclusionLeaf`, O(log n) reads, hashes and rows), so the tree and the
 * spend leaves commit together and never disagree, across processes too.
 * Proofs read O(log n) nodes; nothing is ever rebuilt on a request. The head
 * (size, root) is signed as a C2SP checkpoint note once per head.
 */
import type { InValue } from '@libsql/client';
import type { Transaction } from './sql.ts';
import type { CheckpointSigner } from './checkpoint.ts';
import { exclusionOrigin, jobKey } from '../crypto/exclusion.ts';
import type { Hash } from '../crypto/merkle.ts';
import { checkpointText, signNote } from '../crypto/note.ts';
import {
  ZERO,
  buildTree,
  expectedDepth,
  planInsert,
  proofOfPath,
  rootFromProof,
  walkPath,
  type NodeReader,
  type SmtNode,
  type SparseProof,
} from '../crypto/sparse-merkle.ts';
import type { Db } from './log.ts';

export interface ExclusionHead {
  size: number;
  root: Hash;
}

const blob = (v: unknown): Uint8Array => new Uint8Array(v as ArrayBuffer);

async function treeRow(db: Db, keyId: string): Promise<{ id: number; size: number; root: Hash } | undefined> {
  const rs = await db.execute({ sql: 'SELECT id, size, root FROM pas_exclusion_trees WHERE key_id = ?', args: [keyId] });
  const r = rs.rows[0];
  return r && { id: Number(r.id), size: Number(r.size), root: blob(r.root) };
}

function reader(db: Db, tree: number): NodeReader {
  return async (ids) => {
    const args: InValue[] = [];
    const tuples = ids.map((n) => {
      args.push(n.depth, n.prefix);
      return '(CAST(? AS BIGINT), ?)';
    });
    args.push(tree);
    // One primary-key lookup per wanted id: the ordered join fixes the loop order, which SQLite's planner
    // otherwise gets wrong here (it scans the tree's nodes), as it does for `(depth, prefix) IN (VALUES …)`.
    const rs = await db.execute({
      sql: `SELECT n.depth, n.prefix, n.hash, n.leaf FROM (VALUES ${tuples.join(', ')}) AS v
            ${db.dialect.orderedJoin} pas_exclusion_nodes n ON n.tree = ? AND n.depth = v.column1 AND n.prefix = v.column2`,
      args,
    });
    return rs.rows.map((r) => ({
      depth: Number(r.depth),
      prefix: blob(r.prefix),
      hash: blob(r.hash),
      leaf: r.leaf == null ? null : blob(r.leaf),
    }));
  };
}

/** Rows per INSERT: 5 parameters each, well under SQLite's limit. */
const ROWS_PER_INSERT = 1000;

async function writeNodes(tx: Transaction, tree: number, nodes: readonly SmtNode[]): Promise<void> {
  for (let i = 0; i < nodes.length; i += ROWS_PER_INSERT) {
    const chunk = nodes.slice(i, i + ROWS_PER_INSERT);
    await tx.execute({
      sql: `INSERT INTO pas_exclusion_nodes (tree, depth, prefix, hash, leaf) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}
            ON CONFLICT (tree, depth, prefix) DO UPDATE SET hash = excluded.hash, leaf = excluded.leaf`,
      args: chunk.flatMap((n) => [tree, n.depth, n.prefix, n.hash, n.leaf]),
    });
  }
}

async function createTree(tx: Transaction, keyId: string): Promise<number> {
  const rs = await tx.execute({
    sql: 'INSERT INTO pas_exclusion_trees (key_id, size, root) VALUES (?, 0, ?) RETURNING id',
    args: [keyId, ZERO],
  });
  return Number(rs.rows[0]!.id);
}

/**
 * Adds `jobId` to `keyId`'s exclusion tree, inside the caller's write
 * transaction: the redeem that creates the job's spend leaf calls it in the
 * same transaction. O(log n) node reads (one query), hashes and upserts.
 * @returns the new head.
 * @example await ledger.write(async (tx) => { await consumeTicket(tx, …); await addExclusionLeaf(tx, keyId, jobId); })
 */
export async function addExclusionLeaf(tx: Transaction, keyId: string, jobId: string): Promise<ExclusionHead> {
  const row = await treeRow(tx, keyId);
  const tree = row?.id ?? (await createTree(tx, keyId));
  const key = jobKey(jobId);
  const plan = planInsert(key, await walkPath(reader(tx, tree), key, expectedDepth(row?.size ?? 0)));
  await writeNodes(tx, tree, plan.nodes);
  const size = (row?.size ?? 0) + 1;
  await tx.execute({ sql: 'UPDATE pas_exclusion_trees SET size = ?, root = ? WHERE id = ?', args: [size, plan.root, tree] });
  return { size, root: plan.root };
}

/**
 * Builds `keyId`'s tree from `jobIds` in one pass (set-oriented: nodes are
 * streamed to storage in multi-row inserts as they are made, nothing is
 * upserted or read back). The key must have no tree yet. For the migration
 * that indexes existing spend leaves, and for bench fixtures.
 */
export async function buildExclusionTree(tx: Transaction, keyId: string, jobIds: Iterable<string>): Promise<ExclusionHead> {
  const keys = [...new Set(jobIds)].map(jobKey).sort(Buffer.compare);
  const tree = await createTree(tx, keyId);
  let args: InValue[] = [];
  const flush = async () => {
    if (args.length === 0) return;
    await tx.execute({
      sql: `INSERT INTO pas_exclusion_nodes (tree, depth, prefix, hash, leaf) VALUES ${'(?, ?, ?, ?, ?), '.repeat(args.length / 5 - 1)}(?, ?, ?, ?, ?)`,
      args,
    });
    args = [];
  };
  const root = await buildTree(keys, (n) => {
    args.push(tree, n.depth, n.prefix, n.hash, n.leaf);
    return args.length >= 5 * ROWS_PER_INSERT ? flush() : undefined;
  });
  await flush();
  await tx.execute({ sql: 'UPDATE pas_exclusion_trees SET size = ?, root = ? WHERE id = ?', args: [keys.length, root, tree] });
  return { size: keys.length, root };
}

export async function exclusionHead(db: Db, keyId: string): Promise<ExclusionHead> {
  const row = await treeRow(db, keyId);
  return row ? { size: row.size, root: row.root } : { size: 0, root: ZERO };
}

const equal = (a: Uint8Array, b: Uint8Array) => Buffer.compare(a, b) === 0;

/**
 * The proof for `jobId` with the head it recomputes. The head and the nodes
 * are read by separate statements; a redeem committed between them (another
 * process) shows as a proof that does not recompute the head, read again.
 */
export async function proveExclusion(db: Db, keyId: string, jobId: string): Promise<{ head: ExclusionHead; proof: SparseProof }> {
  const key = jobKey(jobId);
  for (let attempt = 0; ; attempt++) {
    const row = await treeRow(db, keyId);
    if (!row) return { head: { size: 0, root: ZERO }, proof: { depth: 0, siblings: [], leaf: null } };
    const proof = proofOfPath(await walkPath(reader(db, row.id), key, expectedDepth(row.size)));
    if (equal(rootFromProof(key, proof), row.root)) return { head: { size: row.size, root: row.root }, proof };
    if (attempt >= 8) throw new Error(`exclusion tree of ${keyId}: the proof does not recompute the stored root`);
  }
}

export interface SignedExclusionProof {
  origin: string;
  head: ExclusionHead;
  /** The signed C2SP checkpoint note over (origin, size, root). */
  note: string;
  proof: SparseProof;
}

const notes = new Map<string, string>();
const NOTES_MAX = 256;

/**
 * The proof for `jobId` against `keyId`'s current head, signed as a checkpoint
 * note (signed once per head and key). `ctx` is what any checkpoint needs (the
 * app context satisfies it; the ledger imports nothing from api/).
 */
export async function signedExclusionProof(ctx: CheckpointSigner, keyId: string, jobId: string): Promise<SignedExclusionProof> {
  const { head, proof } = await proveExclusion(ctx.ledger.read, keyId, jobId);
  const origin = exclusionOrigin(ctx.config.SITE_URL, keyId === '' ? 'drill' : keyId);
  const key = ctx.keyring.current;
  const text = checkpointText({ origin, size: head.size, root: head.root });
  const cacheKey = `${key.kid}\n${text}`;
  let note = notes.get(cacheKey);
  if (!note) {
    note = signNote(text, origin, key);
    if (notes.size >= NOTES_MAX) notes.delete(notes.keys().next().value!);
    notes.set(cacheKey, note);
  }
  return { origin, head, note, proof };
}

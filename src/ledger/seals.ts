/**
 * Batch seals of the receipts log (migration 0100). The write queue calls
 * `sealReceipts` at the end of every batch, inside the batch's transaction:
 * if the batch appended receipts, ONE seal (signed checkpoint + JWS, see
 * crypto/seal.ts) is written at the log's new size. So a receipt is
 * acknowledged only once its seal is durable: both commit together.
 *
 * A receipt written by a process without a sealer (the CLI) is covered by the
 * next seal any process writes, and until then by a checkpoint signed on
 * demand: a tree head at a size is deterministic, so its evidence can always
 * be re-created.
 */
import type { SigningKey } from '../crypto/keys.ts';
import { makeSeal, type Seal } from '../crypto/seal.ts';
import { nowIso } from '../ids.ts';
import { edgeRoot, type Edge } from '../crypto/tiles.ts';
import { lockEdge } from './log.ts';
import { allSent, type Sql } from './sql.ts';

export const RECEIPTS_LOG = 'receipts';

export interface StoredSeal {
  tree_size: number;
  note: string;
  jws: string;
  kid: string;
}

/**
 * Seals the receipts log at its current size if receipts were appended since
 * the last seal. `head` is the log's head as this transaction wrote it, under
 * its lock (write-queue.ts BatchEnd): then nothing is read, since every seal
 * is at a size the log had before this transaction appended.
 */
export async function sealReceipts(tx: Sql, origin: string, key: SigningKey, head?: Edge): Promise<Seal | undefined> {
  let edge = head;
  if (!edge) {
    // The log's row holds its size and right edge: the head at that size is folded from it, no second read.
    // Locked, so that the seals of batches of several processes follow one another.
    const [locked, sealed] = await allSent([
      lockEdge(tx, RECEIPTS_LOG),
      tx.execute('SELECT COALESCE(MAX(tree_size), 0) AS s FROM receipt_seals'),
    ]);
    edge = locked;
    if (edge.size <= Number(sealed.rows[0]!.s)) return undefined;
  }
  const root = edgeRoot(edge)!;
  const seal = makeSeal(origin, edge.size, root, key);
  await tx.execute({
    sql: 'INSERT INTO receipt_seals (tree_size, root, note, jws, kid, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [edge.size, root, seal.note, seal.jws, seal.kid, nowIso()],
  });
  return seal;
}

/** The first seal that covers leaf `index` (its tree_size is past the index), if one exists yet. */
export async function sealCovering(db: Sql, index: number): Promise<StoredSeal | undefined> {
  const rs = await db.execute({
    sql: 'SELECT tree_size, note, jws, kid FROM receipt_seals WHERE tree_size > ? ORDER BY tree_size LIMIT 1',
    args: [index],
  });
  const r = rs.rows[0];
  return r ? { tree_size: Number(r.tree_size), note: String(r.note), jws: String(r.jws), kid: String(r.kid) } : undefined;
}

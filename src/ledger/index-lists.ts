/**
 * A list of receipts-log indexes stored as one row per batch instead of one
 * per receipt: the batch's first index, and the others as their distances
 * from it (big-endian uint32 each). Each key's receipts (key_receipts) and
 * each PAS job's (pas_job_receipt_lists) are kept this way; the receipts
 * themselves are read from their tiles.
 */

import type { InValue } from '@libsql/client';

/**
 * A batch's lists as rows: `entries` grouped by their list's key columns, each
 * list's indexes ascending, one row `[...key, first, offsets]` a list.
 */
export function indexListRows(entries: Iterable<{ key: readonly string[]; index: number }>): InValue[][] {
  const lists = new Map<string, { key: readonly string[]; indexes: number[] }>();
  for (const { key, index } of entries) {
    const id = JSON.stringify(key);
    const list = lists.get(id);
    if (list) list.indexes.push(index);
    else lists.set(id, { key, indexes: [index] });
  }
  return [...lists.values()].map(({ key, indexes }) => {
    indexes.sort((a, b) => a - b);
    return [...key, indexes[0]!, packOffsets(indexes)];
  });
}

/** An index list's `offsets`: each index after the first, as its distance from the first. `indexes` ascend. */
export function packOffsets(indexes: readonly number[]): Buffer {
  const out = Buffer.allocUnsafe(4 * (indexes.length - 1));
  for (let i = 1; i < indexes.length; i++) out.writeUInt32BE(indexes[i]! - indexes[0]!, 4 * (i - 1));
  return out;
}

/** The indexes of a stored list: `first`, then first + each offset. */
export function unpackIndexes(first: number, offsets: Buffer): number[] {
  const out = [first];
  for (let at = 0; at + 4 <= offsets.length; at += 4) out.push(first + offsets.readUInt32BE(at));
  return out;
}

/** Stored lists hold at most this many indexes: a migration that converts rows splits longer runs. */
export const INDEX_LIST_MAX = 1024;

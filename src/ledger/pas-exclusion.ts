/**
 * The sorted Merkle tree of a key's redeemed spend leaves, and its signed
 * head. Leaves are never deleted, so (count, last seq) identifies a snapshot:
 * the tree is rebuilt in memory only when a redeem added a leaf since, and
 * the head is signed once per snapshot. Correct across processes: every
 * process reads the same rows.
 */
import type { AppContext } from '../api/context.ts';
import { exclusionOrigin, jobKey } from '../crypto/exclusion.ts';
import { checkpointText, signNote } from '../crypto/note.ts';
import { SortedMerkleTree } from '../crypto/sorted-merkle.ts';
import { spendLeafJobIds, spendLeafVersion } from './pas.ts';

export interface ExclusionSnapshot {
  tree: SortedMerkleTree;
  origin: string;
  /** The signed C2SP checkpoint note over (origin, size, root). */
  note: string;
  version: string;
}

const cache = new Map<string, ExclusionSnapshot>();
const CACHE_MAX = 64;

export async function exclusionSnapshot(ctx: AppContext, owner: string): Promise<ExclusionSnapshot> {
  const v = await spendLeafVersion(ctx.ledger.read, owner);
  const key = ctx.keyring.current;
  const version = `${v.count}/${v.last}/${key.kid}`;
  const hit = cache.get(owner);
  if (hit && hit.version === version) return hit;
  const ids = await spendLeafJobIds(ctx.ledger.read, owner, v.last);
  const tree = new SortedMerkleTree(ids.map(jobKey));
  const origin = exclusionOrigin(ctx.config.SITE_URL, owner === '' ? 'drill' : owner);
  const note = signNote(checkpointText({ origin, size: tree.size, root: tree.root() }), origin, key.privateKey, key.raw);
  const snap = { tree, origin, note, version };
  if (cache.size >= CACHE_MAX && !cache.has(owner)) cache.delete(cache.keys().next().value!);
  cache.set(owner, snap);
  return snap;
}

/**
 * C2SP tlog-tiles (https://c2sp.org/tlog-tiles): the shape every log is stored
 * and served in. Pure functions, no storage: tile paths, entry bundles, and the
 * right edge of a tree (the hashes an append needs).
 *
 * A tile at level L holds up to 256 hashes of the tree's nodes at height 8·L;
 * tile N of level L covers those nodes [256·N, 256·N + W). Level 0 tiles hold
 * leaf hashes. An entry bundle holds the entries of level-0 tile N, each
 * prefixed by its length as a big-endian uint16.
 */
import { concatBytes } from './bytes.ts';
import { nodeHash, proveInclusion, rangeNodes, type Hash, type HashReader, type LeafRange } from './merkle.ts';

/** C2SP tiles are 2^8 = 256 hashes wide. */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
/** An entry's length is a big-endian uint16 in a bundle. */
export const MAX_ENTRY_BYTES = 0xffff;

/** `N` as the C2SP text writes it: 3-digit groups, every group but the last prefixed by `x`. */
export function tileIndexPath(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`tile index ${n} is not a non-negative integer`);
  let digits = String(n);
  digits = '0'.repeat((3 - (digits.length % 3)) % 3) + digits;
  const groups = digits.match(/.../g)!;
  return groups.map((g, i) => (i < groups.length - 1 ? `x${g}` : g)).join('/');
}

const widthSuffix = (width: number) => (width === TILE_WIDTH ? '' : `.p/${width}`);

/** `tile/<L>/<N>[.p/<W>]` */
export function tilePath(level: number, n: number, width: number): string {
  return `tile/${level}/${tileIndexPath(n)}${widthSuffix(width)}`;
}

/** `tile/entries/<N>[.p/<W>]` */
export function bundlePath(n: number, width: number): string {
  return `tile/entries/${tileIndexPath(n)}${widthSuffix(width)}`;
}

export interface TileRef {
  /** 'entries' for an entry bundle, else the tile level. */
  level: number | 'entries';
  n: number;
  width: number;
}

/**
 * Parses what follows `tile/` strictly: one spelling per tile (no leading
 * zeros beyond the 3-digit groups, no `.p/256`, no width 0), so that a cache
 * never holds one tile under two names. Undefined when it is not a tile path.
 */
export function parseTilePath(rest: string): TileRef | undefined {
  const m = /^(entries|\d+)\/((?:x\d{3}\/)*\d{3})(?:\.p\/(\d{1,3}))?$/.exec(rest);
  if (!m) return undefined;
  const level = m[1] === 'entries' ? 'entries' : Number(m[1]);
  if (typeof level === 'number' && (String(level) !== m[1] || level > 63)) return undefined;
  const groups = m[2]!.split('/');
  if (groups.length > 1 && groups[0] === 'x000') return undefined;
  const n = Number(groups.map((g) => g.replace('x', '')).join(''));
  if (!Number.isSafeInteger(n)) return undefined;
  const width = m[3] === undefined ? TILE_WIDTH : Number(m[3]);
  if (m[3] !== undefined && (String(width) !== m[3] || width < 1 || width >= TILE_WIDTH)) return undefined;
  return { level, n, width };
}

/**
 * The width of tile `n` at `level` in a tree of `size` leaves: 256 when the
 * tile is full, less for the right-most partial tile, 0 when the tree has no
 * node of that tile yet.
 */
export function tileWidth(level: number, n: number, size: number): number {
  const nodes = Math.floor(size / 2 ** (TILE_HEIGHT * level));
  return Math.max(0, Math.min(TILE_WIDTH, nodes - n * TILE_WIDTH));
}

/** Entries as a C2SP bundle: each one prefixed by its big-endian uint16 length. */
export function encodeBundle(entries: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const e of entries) total += 2 + e.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const e of entries) {
    if (e.length > MAX_ENTRY_BYTES)
      throw new RangeError(`an entry of ${e.length} bytes does not fit a bundle (at most ${MAX_ENTRY_BYTES})`);
    out[at] = e.length >> 8;
    out[at + 1] = e.length & 0xff;
    out.set(e, at + 2);
    at += 2 + e.length;
  }
  return out;
}

export function decodeBundle(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 2 > bytes.length) throw new RangeError('bundle ends inside a length prefix');
    const len = (bytes[at]! << 8) | bytes[at + 1]!;
    if (at + 2 + len > bytes.length) throw new RangeError('bundle ends inside an entry');
    out.push(bytes.subarray(at + 2, at + 2 + len));
    at += 2 + len;
  }
  return out;
}

/**
 * The right edge of a tree of `size` leaves: the hashes of its perfect
 * subtrees, one per 1 bit of `size`, largest first. Folding them from the right
 * gives the root; appending a leaf needs nothing else.
 */
export interface Edge {
  size: number;
  hashes: Hash[];
}

export const EMPTY_EDGE: Edge = { size: 0, hashes: [] };

/** A node a leaf completed: height `level`, `index` among the nodes of that height. */
export interface CompletedNode {
  level: number;
  index: number;
  hash: Hash;
}

/**
 * The edge after appending one leaf hash, and the nodes that leaf completed
 * (one per trailing 1 bit of the old size), lowest first.
 */
export function extendEdge(edge: Edge, leaf: Hash): { edge: Edge; completed: CompletedNode[] } {
  const hashes = [...edge.hashes];
  const completed: CompletedNode[] = [];
  let h = leaf;
  let n = edge.size;
  let level = 0;
  while (n % 2 === 1) {
    h = nodeHash(hashes.pop()!, h);
    level++;
    n = Math.floor(n / 2);
    completed.push({ level, index: n, hash: h });
  }
  hashes.push(h);
  return { edge: { size: edge.size + 1, hashes }, completed };
}

/** The root of the tree the edge ends (RFC 9162 MTH); undefined for the empty tree. */
export function edgeRoot(edge: Edge): Hash | undefined {
  if (edge.hashes.length === 0) return undefined;
  let h = edge.hashes[edge.hashes.length - 1]!;
  for (let i = edge.hashes.length - 2; i >= 0; i--) h = nodeHash(edge.hashes[i]!, h);
  return h;
}

/**
 * The inclusion proof of the last leaf of a tree whose edge *before* that leaf
 * was `before`: the perfect subtrees left of it, smallest first (RFC 9162).
 */
export function lastLeafProof(before: Edge): Hash[] {
  return [...before.hashes].reverse();
}

/**
 * A HashReader over a run of consecutive leaf hashes, the first at index
 * `first` of the tree (a group's appended leaves): MTH of any range within the
 * run, each subtree hashed once however many ranges share it, since the
 * proofs of one group's leaves ask for the same subtrees again and again.
 */
export function leafHashReader(leaves: readonly Hash[], first = 0): HashReader {
  const memo = new Map<string, Hash>();
  const mth = (lo: number, hi: number): Hash => {
    if (hi - lo === 1) return leaves[lo]!;
    const key = `${lo}:${hi}`;
    let h = memo.get(key);
    if (!h) {
      let k = 1;
      while (k * 2 < hi - lo) k *= 2;
      h = nodeHash(mth(lo, lo + k), mth(lo + k, hi));
      memo.set(key, h);
    }
    return h;
  };
  return {
    readHashes: (ranges) =>
      ranges.map(({ lo, hi }) => {
        if (lo < first || hi > first + leaves.length || lo >= hi)
          throw new RangeError(`no leaves [${lo}, ${hi}) in the run [${first}, ${first + leaves.length})`);
        return mth(lo - first, hi - first);
      }),
  };
}

/**
 * The inclusion proof of leaf `before.size` in the tree of `size` leaves
 * (RFC 9162): its siblings on the left are perfect subtrees of `before`, the
 * edge before that leaf; those on the right, hashed from the leaves appended
 * after it (lo > the leaf's index), are read from `after`.
 */
export function inclusionFrom(before: Edge, size: number, after: HashReader): Hash[] {
  const index = before.size;
  const left = rangeNodes(0, index);
  const path = proveInclusion(index, size);
  const right: LeafRange[] = path.filter(({ lo }) => lo > index);
  const read = right.length ? after.readHashes(right) : [];
  let next = 0;
  return path.map(({ lo, hi }) => {
    if (lo > index) return read[next++]!;
    // A sibling on the left is one of the perfect subtrees the edge keeps (the 1 bits of the index).
    const at = left.findIndex((n) => n.index * 2 ** n.level === lo && (n.index + 1) * 2 ** n.level === hi);
    if (at < 0) throw new Error(`no subtree [${lo}, ${hi}) in the edge of size ${index}`);
    return before.hashes[at]!;
  });
}

/** The edge as stored: its hashes concatenated. Its size is stored beside it. */
export function packEdge(edge: Edge): Uint8Array {
  return concatBytes(...edge.hashes);
}

export function unpackEdge(size: number, bytes: Uint8Array | null | undefined): Edge {
  const hashes: Hash[] = [];
  const stored = bytes ?? new Uint8Array(0);
  let ones = 0;
  for (let n = size; n > 0; n = Math.floor(n / 2)) ones += n % 2;
  if (stored.length !== ones * 32) throw new RangeError(`a stored edge of ${stored.length} bytes does not fit a tree of size ${size}`);
  for (let at = 0; at < stored.length; at += 32) hashes.push(stored.subarray(at, at + 32));
  return { size, hashes };
}

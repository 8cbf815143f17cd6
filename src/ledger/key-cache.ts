/**
 * The authentication cache (docs/configuration.md, "Read caches"). A request
 * with a known key costs one SHA-256 of its token and a map lookup, not a query.
 *
 * - Keyed by the SHA-256 of the secret, the same value the database keeps: the
 *   secret itself is never held in memory beyond the request that carried it.
 * - Each answer (a key, or "no such key") is reused for at most `ttlMs`
 *   (AUTH_CACHE_MS, at most 1000): a key revoked, rotated, expired or re-limited
 *   by another process (the CLI on the same file, another server) is seen within
 *   that bound, since the first request after it reads the row again.
 * - A change made through this process (api-keys.ts: create, rotate, revoke,
 *   hop limit, surface) drops the cache of that database at once.
 * - At most MAX_ENTRIES answers are held; the oldest goes first, so unknown
 *   tokens sent at random cannot grow memory.
 * - `hops_used` of a cached key may lag by the bound: it is a pre-check only,
 *   the quota is enforced under the write lock (readHopQuotas, the act pipeline).
 *   An answer is not kept past the key's next period start (the count resets)
 *   nor past the end of a rotation grace. Where the count decides more than a
 *   pre-check (whether a presented x402 payment is taken), it is read afresh.
 */
import { periodReset, type HopPeriod } from '../domain/quota.ts';

/** What the cache reads of a key (api-keys.ts ApiKey) to bound how long its answer is kept. */
interface CachedKey {
  previous_expires_at: string | null;
  hop_period: HopPeriod;
}

export const MAX_ENTRIES = 10_000;

interface Entry {
  key: CachedKey | undefined;
  /** Date.now() after which the answer is read again. */
  until: number;
}

interface Cache {
  entries: Map<string, Entry>;
  /** Bumped by every invalidation: an answer read before it is not stored after it. */
  generation: number;
}

/** One cache per database connection object (tests open several databases in one process). */
const caches = new WeakMap<object, Cache>();

function cacheOf(db: object): Cache {
  let c = caches.get(db);
  if (!c) caches.set(db, (c = { entries: new Map(), generation: 0 }));
  return c;
}

/** Forgets every cached answer for `db` (a key of this database changed in this process). */
export function invalidateKeyCache(db: object): void {
  const c = caches.get(db);
  if (!c) return;
  c.entries.clear();
  c.generation++;
}

/**
 * The cached answer for `hash` when there is a fresh one at `now` (ms since the
 * epoch): `{ key }` (key undefined: known to be unknown), else undefined. Never loads.
 */
export function peekKey<K extends CachedKey>(db: object, hash: string, now = Date.now()): { key: K | undefined } | undefined {
  const hit = caches.get(db)?.entries.get(hash);
  // Only cachedKey<K> stores entries, and one database's keys are all of one type.
  return hit && hit.until > now ? (hit as { key: K | undefined }) : undefined;
}

/**
 * The key for `hash` (the SHA-256 of a token), from the cache when its answer is
 * younger than `ttlMs` at `now` (ms since the epoch), else from `load` (then
 * kept). `ttlMs` 0: always `load`.
 */
export async function cachedKey<K extends CachedKey>(
  db: object,
  hash: string,
  ttlMs: number,
  load: (hash: string) => Promise<K | undefined>,
  now = Date.now(),
): Promise<K | undefined> {
  if (!(ttlMs > 0)) return load(hash);
  const c = cacheOf(db);
  const hit = c.entries.get(hash);
  if (hit && hit.until > now) return hit.key as K | undefined;
  const generation = c.generation;
  const key = await load(hash);
  if (c.generation !== generation) return key;
  let until = now + ttlMs;
  // A secret still in its rotation grace stops at the grace's end, not a bound later;
  // and a new hop period starts the count at 0 at once, not a bound later.
  for (const at of [key?.previous_expires_at, key && periodReset(key.hop_period, new Date(now))]) {
    const t = at ? Date.parse(at) : NaN;
    if (t > now) until = Math.min(until, t);
  }
  c.entries.delete(hash);
  if (c.entries.size >= MAX_ENTRIES) c.entries.delete(c.entries.keys().next().value!);
  c.entries.set(hash, { key: key && Object.freeze(key), until });
  return key;
}

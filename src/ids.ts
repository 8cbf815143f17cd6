/**
 * Opaque, URL-safe identifiers: a type prefix and 128 random bits, so no
 * caller can guess another tenant's id.
 */
import { pooledRandomBytes as random } from './crypto/node.ts';

export function newId(prefix: string, bytes = 16): string {
  return `${prefix}_${random(bytes).toString('base64url')}`;
}

/**
 * An id as `newId` makes, whose first characters are the time in milliseconds
 * (12 hex digits, so that ids sort by creation as plain strings), then 128
 * random bits. For the rows acts write at a high rate under their id as
 * primary key (ASTL manifests, ORN events, spoliation seals, conformity packs,
 * foundry runs, oracle aggregates, triggers, bind tickets): a group's inserts
 * land together at the end of the key's B-tree, so its COMMIT writes a page or
 * two of it instead of one random page a row. Still unguessable. (Webhook deliveries
 * are made in SQL with the same time prefix, then 128 random bits in hex:
 * ledger/webhooks.ts.)
 */
export function newSortableId(prefix: string, now: number = Date.now()): string {
  return `${prefix}_${sortableTimePrefix(now)}${random(16).toString('base64url')}`;
}

/** The time part of a sortable id: milliseconds since the epoch as 12 hex digits. */
export function sortableTimePrefix(now: number): string {
  return now.toString(16).padStart(12, '0');
}

/** Formats instants, keeping the last one's text: asked again for the same millisecond, it formats nothing. */
function isoFormatter(): (ms: number) => string {
  let lastMs = Number.NaN;
  let lastIso = '';
  return (ms) => {
    // An invalid instant (NaN) never equals the last one, so toISOString still throws for it.
    if (ms !== lastMs) {
      lastIso = new Date(ms).toISOString();
      lastMs = ms;
    }
    return lastIso;
  };
}

// Two, so that an act asking for the current time and for its group's instant in turn formats neither each time.
const currentIso = isoFormatter();
const givenIso = isoFormatter();

/**
 * UTC RFC 3339 timestamp with millisecond precision, of `now` or the current
 * time. Each millisecond is formatted once: a busy act asks several times, and
 * every receipt of a group asks for the group's one instant.
 */
export function nowIso(now?: Date): string {
  return now ? givenIso(now.getTime()) : currentIso(Date.now());
}

/** RFC 7519 NumericDate: whole seconds since the epoch (the `iat` of both receipt kinds). */
export function numericDate(now: Date = new Date()): number {
  return Math.floor(now.getTime() / 1000);
}

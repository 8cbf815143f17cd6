/**
 * Opaque, URL-safe identifiers: a type prefix and 128 random bits, so no
 * caller can guess another tenant's id.
 */
import { randomBytes } from 'node:crypto';

export function newId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

/**
 * An id as `newId` makes, whose first characters are the time in milliseconds
 * (12 hex digits, so that ids sort by creation as plain strings), then 128
 * random bits. For rows inserted at a high rate and indexed by id (receipts):
 * each insert lands at the end of the index, so a batch of a hundred writes a
 * page or two of it instead of a hundred random ones. Still unguessable.
 */
export function newSortableId(prefix: string, now: number = Date.now()): string {
  return `${prefix}_${now.toString(16).padStart(12, '0')}${randomBytes(16).toString('base64url')}`;
}

/** UTC RFC 3339 timestamp with millisecond precision. */
export function nowIso(now: Date = new Date()): string {
  return now.toISOString();
}

/** RFC 7519 NumericDate: whole seconds since the epoch (the `iat` of both receipt kinds). */
export function numericDate(now: Date = new Date()): number {
  return Math.floor(now.getTime() / 1000);
}

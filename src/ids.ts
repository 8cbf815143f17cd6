/**
 * Opaque, URL-safe identifiers: a type prefix and 128 random bits, so no
 * caller can guess another tenant's id.
 */
import { randomBytes } from 'node:crypto';

export function newId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

/** UTC RFC 3339 timestamp with millisecond precision. */
export function nowIso(now: Date = new Date()): string {
  return now.toISOString();
}

/** RFC 7519 NumericDate: whole seconds since the epoch (the `iat` of both receipt kinds). */
export function numericDate(now: Date = new Date()): number {
  return Math.floor(now.getTime() / 1000);
}

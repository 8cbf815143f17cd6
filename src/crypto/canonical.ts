/**
 * Canonical JSON (the subset of RFC 8785 JCS our payloads use: objects with
 * keys sorted by UTF-16 code units, no whitespace, JSON.stringify for strings
 * and finite numbers). The same value always gives the same bytes, so its
 * SHA-256 is a stable fingerprint. Values nested deeper than a bound are
 * encoded by walking an explicit stack, not the call stack, so no depth of
 * nesting can overflow it.
 */
import { sha256Hex } from './platform.ts';

/** A value still to encode, or text to emit as is. */
type Work = { value: unknown } | string;

function scalar(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no NaN or Infinity');
      return JSON.stringify(value);
    default:
      if (value === null) return 'null';
      throw new TypeError(`canonical JSON cannot encode ${typeof value}`);
  }
}

/** Past this depth the encoder walks its own stack instead of recursing. */
const RECURSION_DEPTH = 64;
const TOO_DEEP = Symbol('too deep to recurse');

/**
 * A key's encoded text with its colon, for the keys payloads repeat in every
 * act (kind, decision, data...). Bounded in count and length: a caller's own
 * keys (a fingerprinted body) cannot grow it past a few hundred KiB.
 */
const keyTexts = new Map<string, string>();
const KEY_TEXTS_MAX = 2048;
const CACHED_KEY_LENGTH = 64;

function keyText(k: string): string {
  let text = keyTexts.get(k);
  if (text === undefined) {
    text = JSON.stringify(k) + ':';
    if (k.length <= CACHED_KEY_LENGTH && keyTexts.size < KEY_TEXTS_MAX) keyTexts.set(k, text);
  }
  return text;
}

/** Whether the keys are already in canonical order (most payloads are built in it): then they need no sort. */
function inOrder(keys: string[]): boolean {
  for (let i = 1; i < keys.length; i++) if (!(keys[i - 1]! < keys[i]!)) return false;
  return true;
}

/** The same encoding by recursion: several times faster on the shallow payloads every act signs. */
function recursive(v: unknown, depth: number): string {
  if (v === null || typeof v !== 'object') return scalar(v);
  if (depth > RECURSION_DEPTH) throw TOO_DEEP;
  if (Array.isArray(v)) {
    let s = '[';
    for (let i = 0; i < v.length; i++) s += (i ? ',' : '') + recursive(v[i] === undefined ? null : v[i], depth + 1);
    return s + ']';
  }
  const keys = Object.keys(v);
  // Array.prototype.sort() without a comparator orders strings by UTF-16 code units, as JCS does.
  if (!inOrder(keys)) keys.sort();
  let s = '{';
  for (const k of keys) {
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined) continue;
    s += (s.length > 1 ? ',' : '') + keyText(k) + recursive(x, depth + 1);
  }
  return s + '}';
}

export function canonicalJson(value: unknown): string {
  try {
    return recursive(value, 0);
  } catch (e) {
    if (e !== TOO_DEEP) throw e;
    return iterative(value);
  }
}

function iterative(value: unknown): string {
  const out: string[] = [];
  const stack: Work[] = [{ value }];
  while (stack.length) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      out.push('[');
      stack.push(']');
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] === undefined ? null : v[i] });
        if (i > 0) stack.push(',');
      }
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, x]) => x !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      out.push('{');
      stack.push('}');
      for (let i = entries.length - 1; i >= 0; i--) {
        stack.push({ value: entries[i]![1] });
        stack.push(`${JSON.stringify(entries[i]![0])}:`);
        if (i > 0) stack.push(',');
      }
    } else {
      out.push(scalar(v));
    }
  }
  return out.join('');
}

/** SHA-256 (hex) of a value's canonical JSON: the fingerprint of an act or a write. */
export function fingerprint(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

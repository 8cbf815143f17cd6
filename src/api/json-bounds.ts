/**
 * Bounds on a parsed JSON body, checked before anything else reads it: a
 * nesting depth (deep values would overflow recursive code further on: zod,
 * JSON.stringify, signing) and a number range (`1e400` parses to Infinity;
 * integers past 2^53 are silently rounded). Both answer 400, naming where.
 * The walk itself is iterative, so it cannot overflow on what it refuses.
 */
import { badRequest, type Problem } from './problem.ts';

/** Deepest nesting of objects and arrays accepted in a request body (the top level is depth 1). */
export const MAX_JSON_DEPTH = 32;
/** Largest magnitude of a JSON number accepted: past it a number is not exact (send big amounts as decimal strings). */
export const MAX_JSON_NUMBER = Number.MAX_SAFE_INTEGER;

/** The first bound `value` breaks, as a 400 problem, or undefined when it is within bounds. */
export function jsonBoundsProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): Problem | undefined {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: value, depth: 0, path: '' }];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === 'number') {
      if (!Number.isFinite(v) || Math.abs(v) > MAX_JSON_NUMBER) {
        const field = path || '(body)';
        const message = `number out of range: JSON numbers must be finite and within ±${MAX_JSON_NUMBER} (send larger amounts as decimal strings)`;
        return badRequest('number_out_of_range', `${field}: ${message}`, { errors: [{ field, message }] });
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > maxDepth) {
      const field = path || '(body)';
      const message = `nested deeper than ${maxDepth} levels`;
      return badRequest('json_too_deep', `${field}: ${message}`, { errors: [{ field, message }], max_depth: maxDepth });
    }
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x] as const) : Object.entries(v);
    for (const [k, x] of entries) stack.push({ v: x, depth: depth + 1, path: path ? `${path}.${k}` : k });
  }
  return undefined;
}

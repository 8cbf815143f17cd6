/**
 * Rate limits for the public demo endpoints, per client address, in fixed
 * windows counted in the database (they hold across processes sharing it).
 * Answers carry the IETF structured-field headers (draft-ietf-httpapi-ratelimit-headers):
 *   RateLimit-Policy: "demo";q=30;w=60
 *   RateLimit: "demo";r=29;t=41
 * and past the limit 429 problem+json with Retry-After.
 */
import type { H3Event } from 'h3';
import { countInWindow, dropWindowsBefore } from '../ledger/rate-windows.ts';
import { clientAddressOf } from './client-address.ts';
import type { AppContext } from './context.ts';
import { Problem } from './problem.ts';

const POLICY = 'demo';

/** The client address the limit counts (behind TRUST_PROXY_HOPS trusted proxies). */
export function clientAddress(event: H3Event, trustedHops = 0): string {
  return clientAddressOf(event, trustedHops);
}

/** Counts this request; throws 429 past the limit. Sets the RateLimit headers either way. */
export async function enforceDemoRateLimit(event: H3Event, ctx: AppContext): Promise<void> {
  const limit = ctx.config.DEMO_RATE_LIMIT;
  const windowSeconds = ctx.config.DEMO_RATE_WINDOW_SECONDS;
  const now = Math.floor(Date.now() / 1000);
  const windowStart = now - (now % windowSeconds);
  const bucket = `${POLICY}:${clientAddress(event, ctx.config.TRUST_PROXY_HOPS)}`;
  const count = await ctx.ledger.write(async (tx) => {
    const n = await countInWindow(tx, bucket, windowStart);
    // Past windows of every client are garbage: drop them while we hold the lock anyway.
    await dropWindowsBefore(tx, windowStart);
    return n;
  });
  const reset = windowStart + windowSeconds - now;
  const remaining = Math.max(0, limit - count);
  const policy = `"${POLICY}";q=${limit};w=${windowSeconds}`;
  const state = `"${POLICY}";r=${remaining};t=${reset}`;
  event.res.headers.set('ratelimit-policy', policy);
  event.res.headers.set('ratelimit', state);
  if (count > limit) {
    throw new Problem({
      status: 429,
      code: 'rate_limited',
      title: 'Too many requests',
      detail: `the public demo allows ${limit} requests per ${windowSeconds} s per client address; retry in ${reset} s, or use an API key`,
      headers: { 'retry-after': String(reset), 'ratelimit-policy': policy, ratelimit: state },
    });
  }
}

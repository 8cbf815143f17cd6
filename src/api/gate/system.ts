/**
 * Service-level routes: health (SPEC 4.1), the calling key's metadata and
 * usage (GET /v1/me), and the current signing key (GET /crypto/public-key,
 * foundry layer 0).
 */
import { countPendingReviews } from '../../ledger/reviews.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { nowIso } from '../../ids.ts';
import { reviewTerms } from './reviews.ts';
import { z } from 'zod';
import { periodReset, periodStart } from '../../domain/quota.ts';
import { advertisedUrlProblem } from '../../config.ts';
import { getApiKey, type ApiKey } from '../../ledger/api-keys.ts';
import { databaseState, freshDatabaseState } from '../../ledger/health-probe.ts';
import { usage } from '../../ledger/meter.ts';
import { readyKey } from '../auth.ts';
import { openCheckoutView } from './operator.ts';
import { cacheNow, type AppContext } from '../context.ts';
import type { Router } from '../router.ts';
import { HTTPResponse } from 'h3';
import { reply, toResponse } from '../reply.ts';
import { spentThisMonth } from '../../ledger/spend-caps.ts';
import { capView } from '../spend-cap.ts';
import { accountCapView } from './account-spend-cap.ts';
import { operation } from '../operation.ts';

/** The /health body, on 200 and 503 alike. */
const healthResponse = z.object({
  status: z.enum(['ok', 'unavailable']),
  version: z.string(),
  database: z.enum(['ok', 'read_only', 'unreachable']),
  database_write: z.enum(['ok', 'failing']),
  environment: z.string(),
  base_url: z.string(),
  site_url: z.string(),
  problems: z.array(z.string()).optional(),
});

const JSON_NO_STORE = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

/**
 * GET /v1/me's body, serialized: the key as it is now, and under `usage` what
 * this period counted, its hops and its tolls alike (period_start up to now);
 * under `lifetime` the key's tolls since it was made; the open checkout; and
 * the account's pending reviews with what a review costs (docs/reviews.md);
 * under `spend_caps` the key's and the account's monthly caps, spent and remaining.
 */
async function meFresh(ctx: AppContext, authenticated: ApiKey): Promise<string> {
  // The authenticated key may come from the auth cache, whose hops_used may lag: read the row.
  const key = (await getApiKey(ctx.ledger.read, authenticated.id)) ?? authenticated;
  const start = periodStart(key.hop_period);
  const [life, checkout, pendingReviews, keySpent, account] = await Promise.all([
    usage(ctx.ledger.read, key.id),
    openCheckoutView(ctx, key.id),
    countPendingReviews(ctx.ledger.read, ownerId(key), nowIso()),
    spentThisMonth(ctx.ledger.read, { keyId: key.id }),
    accountCapView(ctx, key.account_id),
  ]);
  // A key whose period is "none" has one period: its lifetime.
  const u = start ? await usage(ctx.ledger.read, key.id, start) : life;
  return JSON.stringify({
    object: 'api_key',
    id: key.id,
    account_id: key.account_id,
    role: key.role,
    mode: key.mode ?? 'live',
    name: key.name,
    prefix: key.prefix,
    created_at: key.created_at,
    hop_limit: key.hop_limit,
    usage: {
      period: key.hop_period,
      period_start: start || null,
      resets_at: periodReset(key.hop_period),
      hops_used: key.hops_used,
      hops_remaining: Math.max(0, key.hop_limit - key.hops_used),
      tolls: u.by_sku,
      total_usd: u.total_usd,
      nap_usd: u.nap_usd,
    },
    lifetime: {
      since: key.created_at,
      tolls: life.by_sku,
      total_usd: life.total_usd,
      nap_usd: life.nap_usd,
    },
    spend_caps: {
      month: account.month,
      resets_at: account.resets_at,
      key: capView(key.spend_cap_micros, keySpent),
      account: {
        spend_cap_usd: account.spend_cap_usd,
        spent_this_month_usd: account.spent_this_month_usd,
        remaining_usd: account.remaining_usd,
      },
    },
    operator_checkout: checkout,
    reviews: reviewTerms(ctx, pendingReviews),
  });
}

interface MeEntry {
  body: string;
  /** The body's headers as a Node header list (for the ready answer). */
  headers: string[];
  /** ledger.commits() when the body was read: any write of this process since makes it stale. */
  commits: number;
  /** Date.now() after which it is read again (changes by other processes, a new period). */
  until: number;
}

const ME_CACHE_MAX = 10_000;
const meCaches = new WeakMap<object, Map<string, MeEntry>>();

/**
 * GET /v1/me's body, reused while this process has written nothing and for at
 * most AUTH_CACHE_MS (docs/configuration.md, "Read caches"): the usage
 * aggregate, the checkout figures and the key row cost no query then.
 */
async function meBody(ctx: AppContext, key: ApiKey): Promise<string> {
  const ttl = ctx.config.AUTH_CACHE_MS;
  const commits = ctx.ledger.commits();
  if (!(ttl > 0)) return meFresh(ctx, key);
  let cache = meCaches.get(ctx.ledger);
  if (!cache) meCaches.set(ctx.ledger, (cache = new Map()));
  const now = cacheNow(ctx);
  const hit = cache.get(key.id);
  if (hit && hit.commits === commits && hit.until > now) return hit.body;
  const body = await meFresh(ctx, key);
  cache.delete(key.id);
  if (cache.size >= ME_CACHE_MAX) cache.delete(cache.keys().next().value!);
  const headers = [
    'content-type',
    JSON_NO_STORE['content-type'],
    'cache-control',
    JSON_NO_STORE['cache-control'],
    'content-length',
    String(Buffer.byteLength(body)),
  ];
  cache.set(key.id, { body, headers, commits, until: now + ttl });
  return body;
}

/** meBody's answer when the cache holds a fresh one, without reading anything; else undefined. */
function cachedMe(ctx: AppContext, keyId: string): MeEntry | undefined {
  const hit = meCaches.get(ctx.ledger)?.get(keyId);
  return hit && hit.commits === ctx.ledger.commits() && hit.until > cacheNow(ctx) ? hit : undefined;
}

type DatabaseHealth = 'ok' | 'read_only' | 'unreachable';
interface HealthAnswer {
  status: number;
  body: string;
  /** The answer's headers as a Node header list (for the ready answer). */
  headers: string[];
}
const healthAnswers = new WeakMap<AppContext, Map<DatabaseHealth, HealthAnswer>>();
const databaseHealth = (s: { readable: boolean; writable: boolean }): DatabaseHealth =>
  !s.readable ? 'unreachable' : s.writable ? 'ok' : 'read_only';

/**
 * The /health answer for a database state. The rest of it (version, URLs and
 * whether they can be this service) is fixed while the process runs, so each
 * of the three answers is built once, not per request.
 */
function healthAnswer(ctx: AppContext, database: DatabaseHealth): HealthAnswer {
  let answers = healthAnswers.get(ctx);
  if (!answers) healthAnswers.set(ctx, (answers = new Map()));
  let answer = answers.get(database);
  if (answer) return answer;
  const { config } = ctx;
  const problems: string[] = [];
  if (database === 'unreachable') problems.push('the database cannot be reached');
  if (database === 'read_only') problems.push('the database answers reads but a write did not commit in time: acts would answer 503');
  const advertised = advertisedUrlProblem(config);
  if (advertised) problems.push(advertised);
  const body = {
    status: problems.length ? 'unavailable' : 'ok',
    version: ctx.version,
    database,
    database_write: database === 'ok' ? 'ok' : 'failing',
    environment: config.NODE_ENV,
    base_url: config.BASE_URL,
    site_url: config.SITE_URL,
    ...(problems.length ? { problems } : {}),
  } satisfies z.infer<typeof healthResponse>;
  const json = JSON.stringify(body);
  const headers = [
    'content-type',
    JSON_NO_STORE['content-type'],
    'cache-control',
    JSON_NO_STORE['cache-control'],
    'content-length',
    String(Buffer.byteLength(json)),
  ];
  answers.set(database, (answer = { status: problems.length ? 503 : 200, body: json, headers }));
  return answer;
}

export function registerSystemRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/health',
      summary: 'Liveness and readiness: version, database reachability and a write probe',
      auth: 'public',
      tag: 'system',
      responses: {
        200: { description: 'Ready', schema: healthResponse },
        503: { description: 'Not ready: `problems` says why (the same body, not a problem document)', schema: healthResponse },
      },
    },
    async () => {
      const state = await databaseState(ctx.ledger, ctx.config.HEALTH_WRITE_PROBE_TIMEOUT_MS, () => cacheNow(ctx));
      const { status, body } = healthAnswer(ctx, databaseHealth(state));
      return new HTTPResponse(body, { status, headers: JSON_NO_STORE });
    },
  );
  // With the key and its answer both fresh in the caches, the same answer is given at the Node level.
  router.readyAnswer('/v1/me', (req) => {
    const key = readyKey(req, ctx);
    const me = key && cachedMe(ctx, key.id);
    return me ? { status: 200, headers: me.headers, body: me.body } : undefined;
  });
  // While the database state is fresh (at most a second old), the same answer is given at the Node level.
  router.readyAnswer('/health', () => {
    const state = freshDatabaseState(ctx.ledger, cacheNow(ctx));
    return state && healthAnswer(ctx, databaseHealth(state));
  });

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/me',
      tool: 'me',
      summary:
        "The calling key's account, role, hop limit, this period's hops and tolls per SKU (used, remaining, reset time), its lifetime tolls, and its and its account's monthly spend caps (cap, spent, remaining)",
      auth: 'key',
      tag: 'system',
    },
    async ({ key }) => {
      return new HTTPResponse(await meBody(ctx, key), { headers: JSON_NO_STORE });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/crypto/public-key',
      summary: 'The current Ed25519 signing key (JWK and raw base64) and retired keys',
      auth: 'public',
      tag: 'system',
    },
    () => {
      const { current, all } = ctx.keyring;
      return toResponse(
        reply({
          kid: current.kid,
          alg: 'EdDSA',
          crv: 'Ed25519',
          jwk: current.jwk,
          public_key_base64: Buffer.from(current.raw).toString('base64'),
          created_at: current.created_at,
          retired: all
            .filter((k) => k.retired_at)
            .map((k) => ({ kid: k.kid, jwk: k.jwk, public_key_base64: Buffer.from(k.raw).toString('base64'), retired_at: k.retired_at })),
        }),
        { 'cache-control': 'public, max-age=60', 'access-control-allow-origin': '*' },
      );
    },
  );
}

/**
 * The keys of the caller's account (issue 14), for operator keys only: an
 * agent key can neither list nor mint keys, so it can never mint an operator.
 *   GET  /v1/keys                      the account's keys (never a secret)
 *   POST /v1/keys                      {name, role?, mode?, hop_limit?, expires_at? | expires_in_seconds?, spend_cap_usd?} -> 201 with the secret, once
 *   GET  /v1/keys/{id}                 one key
 *   POST /v1/keys/{id}/revoke          401 from then on (within a second in every process: auth reads the ledger)
 *   POST /v1/keys/{id}/rotate          {grace_seconds?}: a new secret; the old one works until the grace ends
 *   POST /v1/keys/{id}/limit           {hop_limit}: the hops the key may make per period
 *   POST /v1/keys/{id}/surface         {kinds} | {preset} | {default: true}: the act kinds it may act on
 *   POST /v1/keys/{id}/expiry          {expires_at | expires_in_seconds | null}: when it stops working
 *   POST /v1/keys/{id}/reviews         {review_expires_in_seconds | null}: how long a review its HOLD opens waits
 *   POST /v1/keys/{id}/spend-cap       {spend_cap_usd | null}: the most it may be charged per UTC month
 * Another account's key is 404, and so is a live key to a test key: a test
 * key lists and manages its account's test keys only, and makes only test
 * keys (docs/test-mode.md). Create and rotate answer a secret, so they are
 * not replayed from the idempotency store (which would keep it in clear).
 */
import type { H3Event } from 'h3';
import { z } from 'zod';
import { HOP_PERIODS, periodReset } from '../../domain/quota.ts';
import { nowIso } from '../../ids.ts';
import { loginOfAccount } from '../../ledger/accounts.ts';
import { dashboardTestKey } from '../../ledger/dashboard-modes.ts';
import {
  KEY_MODES,
  KEY_ROLES,
  accountKeysPage,
  isTestKey,
  createApiKey,
  getApiKey,
  isExpired,
  revokeApiKey,
  rotateApiKey,
  setHopLimit,
  setKeyExpiry,
  setKeyReviewTtl,
  setKeySpendCap,
  setKeySurface,
  type ApiKey,
} from '../../ledger/api-keys.ts';
import { REVIEW_TTL_MAX_SECONDS, REVIEW_TTL_MIN_SECONDS } from '../../domain/review.ts';
import { actKindSchema, DEFAULT_ACT_KINDS, SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import type { AppContext } from '../context.ts';
import { Problem, badRequest, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { spentThisMonth } from '../../ledger/spend-caps.ts';
import { capMicros, capUsd, capView, capViewSchema, spendCapUsd } from '../spend-cap.ts';
import { operation } from '../operation.ts';
import { pick } from '../audit.ts';

const keyIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a key id such as key_…');
const keysListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(100),
  starting_after: keyIdSchema.optional().describe('the last key id of the previous page'),
});

const reviewTtl = z.number().int().min(REVIEW_TTL_MIN_SECONDS).max(REVIEW_TTL_MAX_SECONDS);
const reviewTtlRequest = z.strictObject({
  review_expires_in_seconds: reviewTtl
    .nullable()
    .describe("how long a review this key's HOLD opens waits (60 s to 30 days); null: REVIEW_TTL_SECONDS"),
});

export const createKeyRequest = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    role: z.enum(KEY_ROLES).default('agent').describe('agent (the default: acts, may blow a fuse) or operator (also manages)'),
    mode: z
      .enum(KEY_MODES)
      .optional()
      .describe(
        'live (the default for a live caller: billed, receipts in the receipts log) or test (a `fg_test_` key: decided the same, receipts in the test log, billed nothing); a test key makes test keys only',
      ),
    hop_limit: z.number().int().positive().optional().describe('hops per period; default HOP_LIMIT_DEFAULT'),
    hop_period: z.enum(HOP_PERIODS).optional().describe('the UTC period the limit counts over; default HOP_LIMIT_PERIOD (month)'),
    expires_at: z.iso.datetime({ offset: true }).optional().describe('RFC 3339 time after which the key answers 401'),
    expires_in_seconds: z
      .number()
      .int()
      .positive()
      .max(10 * 365 * 86_400)
      .optional(),
    review_expires_in_seconds: reviewTtl
      .optional()
      .describe("how long a review this key's HOLD opens waits for a person; default REVIEW_TTL_SECONDS (a mandate's own still wins)"),
    spend_cap_usd: spendCapUsd
      .optional()
      .describe('the most this key may be charged per UTC calendar month, decimal USD (e.g. "250.00"); absent or null: no cap of its own'),
  })
  .refine((b) => b.expires_at === undefined || b.expires_in_seconds === undefined, {
    message: 'send at most one of expires_at and expires_in_seconds',
  });
const spendCapRequest = z.strictObject({ spend_cap_usd: spendCapUsd });
const rotateRequest = z.strictObject({
  grace_seconds: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('how long the old secret keeps working; default KEY_ROTATION_GRACE_SECONDS'),
});
const limitRequest = z.strictObject({ hop_limit: z.number().int().positive(), hop_period: z.enum(HOP_PERIODS).optional() });
const surfaceRequest = z
  .strictObject({
    kinds: z.array(actKindSchema).min(1).max(200).optional().describe('the act kinds the key may act on, e.g. ["pay", "refund"]'),
    preset: z
      .enum(Object.keys(SURFACE_PRESETS) as [string, ...string[]])
      .optional()
      .describe("a preset's kinds (the absence catalog's surface presets)"),
    default: z.literal(true).optional().describe("back to the default surface: every preset's kinds, and a hop may name no kind"),
  })
  .refine((b) => [b.kinds, b.preset, b.default].filter((x) => x !== undefined).length === 1, {
    message: 'send exactly one of kinds, preset and default',
  });
const expiryRequest = z
  .strictObject({
    expires_at: z.iso
      .datetime({ offset: true })
      .nullable()
      .optional()
      .describe('RFC 3339 time after which the key answers 401; null: never'),
    expires_in_seconds: z
      .number()
      .int()
      .positive()
      .max(10 * 365 * 86_400)
      .optional(),
  })
  .refine((b) => (b.expires_at === undefined) !== (b.expires_in_seconds === undefined), {
    message: 'send exactly one of expires_at (null for never) and expires_in_seconds',
  });

export const keyResponse = z.object({
  object: z.literal('api_key'),
  id: z.string(),
  account_id: z.string(),
  name: z.string(),
  role: z.enum(KEY_ROLES),
  mode: z.enum(KEY_MODES).describe('live, or test: its acts are logged in the test log and billed nothing (docs/test-mode.md)'),
  prefix: z.string().describe('the first characters of the secret, to recognise it (fg_live_… or fg_test_…)'),
  status: z.enum(['active', 'revoked', 'expired']),
  hop_limit: z.number(),
  hop_period: z.enum(HOP_PERIODS),
  hops_used: z.number().describe('this period'),
  resets_at: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  last_used_at: z.string().nullable().describe('approximate: written at most once a minute'),
  revoked_at: z.string().nullable(),
  rotated_at: z.string().nullable(),
  previous_secret_expires_at: z.string().nullable(),
  surface: z
    .object({
      kinds: z.array(z.string()).describe('the act kinds a hop of this key may name; any other is a BLOCK'),
      declared: z
        .boolean()
        .describe('the operator declared them (then every hop must name its act kind); false: the default, every preset'),
    })
    .describe("the key's declared surface"),
  review_expires_in_seconds: z.number().nullable().describe("how long a review this key's HOLD opens waits; null: REVIEW_TTL_SECONDS"),
  spend_cap_usd: z
    .string()
    .nullable()
    .describe('the most this key may be charged per UTC calendar month (null: no cap of its own; its account may have one)'),
});

/** One key with its month's spend beside its cap (GET /v1/keys/{id}, POST /v1/keys/{id}/spend-cap). */
const keyWithSpendResponse = keyResponse.extend({
  spent_this_month_usd: capViewSchema.spent_this_month_usd,
  remaining_usd: capViewSchema.remaining_usd,
});

export function keyObject(k: ApiKey, now = nowIso()) {
  return {
    object: 'api_key',
    id: k.id,
    account_id: k.account_id,
    name: k.name,
    role: k.role,
    mode: k.mode ?? 'live',
    prefix: k.prefix,
    status: k.revoked_at ? 'revoked' : isExpired(k, now) ? 'expired' : 'active',
    hop_limit: k.hop_limit,
    hop_period: k.hop_period,
    hops_used: k.hops_used,
    resets_at: periodReset(k.hop_period),
    created_at: k.created_at,
    expires_at: k.expires_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
    rotated_at: k.rotated_at,
    previous_secret_expires_at: k.previous_expires_at && k.previous_expires_at > now ? k.previous_expires_at : null,
    surface: { kinds: [...(k.surface ?? DEFAULT_ACT_KINDS)], declared: k.surface !== undefined },
    review_expires_in_seconds: k.review_ttl_seconds ?? null,
    spend_cap_usd: capUsd(k.spend_cap_micros),
  };
}

const createdKeyResponse = keyResponse.extend({ secret: z.string(), notice: z.string() });

const SECRET_NOTICE = 'Store the secret now: it is shown once and only its hash is kept.';

/** When a key asked to expire (in seconds from now, or at a time) does; null: never. 400 for a time not in the future. */
function expiryOf(b: { expires_in_seconds?: number | undefined; expires_at?: string | null | undefined }): string | null {
  const now = Date.now();
  const expiresAt =
    b.expires_in_seconds !== undefined
      ? nowIso(new Date(now + b.expires_in_seconds * 1000))
      : b.expires_at
        ? nowIso(new Date(b.expires_at))
        : null;
  if (expiresAt !== null && expiresAt <= nowIso(new Date(now)))
    throw badRequest('invalid_body', 'expires_at: must be in the future', {
      errors: [{ field: 'expires_at', message: 'must be in the future' }],
    });
  return expiresAt;
}

/** Whether `caller` may see and manage `key`: a key of its account, and for a test caller a test key only. */
const manages = (caller: ApiKey, key: ApiKey): boolean => key.account_id === caller.account_id && (!isTestKey(caller) || isTestKey(key));

export function registerKeyRoutes(router: Router, ctx: AppContext): void {
  /** The key named in the path if the caller may manage it (its account's; a test caller: a test key); else 404, as if it did not exist. */
  const accountKey = async (event: H3Event, caller: ApiKey) => {
    const id = keyIdSchema.safeParse(event.context.params?.key_id);
    const key = id.success ? await getApiKey(ctx.ledger.read, id.data) : undefined;
    if (!key || !manages(caller, key)) throw notFound(`no key ${String(event.context.params?.key_id)} in this account`, 'unknown_key');
    return key;
  };
  const doc = { auth: 'key', role: 'operator', tag: 'keys' } as const;
  /** The key as the API shows it, with what it was charged this month beside its cap. */
  const withSpend = async (k: ApiKey) => ({
    ...keyObject(k),
    ...capView(k.spend_cap_micros, await spentThisMonth(ctx.ledger.read, { keyId: k.id })),
  });
  /** The dashboard's own key is not revoked or given an expiry through the API: that would lock the account out. */
  const refuseDashboardKey = async (key: ApiKey, instead: string) => {
    if (
      (await loginOfAccount(ctx.ledger.read, key.account_id))?.dashboard_key_id === key.id ||
      (await dashboardTestKey(ctx.ledger.read, key.account_id))?.id === key.id
    ) {
      throw new Problem({
        status: 409,
        code: 'dashboard_key',
        title: 'Conflict',
        detail: `${key.id} is the signed-in dashboard's own key: ${instead}`,
      });
    }
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/keys',
      ...doc,
      tool: 'keys_list',
      summary: "List the account's API keys, oldest first (never their secrets)",
      query: keysListQuery,
      problems: [400],
    },
    async ({ key: caller, input: q }) => {
      let after: ApiKey | undefined;
      if (q.starting_after !== undefined) {
        after = await getApiKey(ctx.ledger.read, q.starting_after);
        if (!after || !manages(caller, after)) {
          const detail = `starting_after: no key ${q.starting_after} in this account`;
          throw badRequest('invalid_query', detail, {
            errors: [{ field: 'starting_after', message: `no key ${q.starting_after} in this account` }],
          });
        }
      }
      const now = nowIso();
      const keys = await accountKeysPage(ctx.ledger.read, caller.account_id, q.limit + 1, after, isTestKey(caller) ? 'test' : undefined);
      return reply({ object: 'list', data: keys.slice(0, q.limit).map((k) => keyObject(k, now)), has_more: keys.length > q.limit });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys',
      audit: { action: 'key.created', detail: (a) => pick(a, ['name', 'role']) },
      ...doc,
      tool: 'keys_create',
      summary:
        'Create a key in the calling account (agent by default; live by default, `"mode": "test"` for a test key); the secret is in this answer only',
      body: createKeyRequest,
      response: createdKeyResponse,
      responses: { 201: { description: 'The key, with its secret (shown this once)', schema: createdKeyResponse } },
      problems: [403],
      example: { name: 'payments agent', role: 'agent', expires_in_seconds: 7_776_000 },
    },
    async ({ key: caller, input: b }) => {
      if (isTestKey(caller) && b.mode === 'live') {
        throw new Problem({
          status: 403,
          code: 'test_key_makes_test_keys',
          title: 'Forbidden',
          detail: 'a test key makes test keys only: create a live key with a live operator key or on the dashboard',
        });
      }
      const expiresAt = expiryOf(b);
      const { key, secret } = await createApiKey(ctx.ledger, {
        name: b.name,
        role: b.role,
        mode: b.mode ?? (isTestKey(caller) ? 'test' : 'live'),
        hopLimit: b.hop_limit ?? ctx.config.HOP_LIMIT_DEFAULT,
        hopPeriod: b.hop_period ?? ctx.config.HOP_LIMIT_PERIOD,
        accountId: caller.account_id,
        expiresAt,
        reviewTtlSeconds: b.review_expires_in_seconds ?? null,
        spendCapMicros: capMicros(b.spend_cap_usd ?? null),
      });
      return reply({ ...keyObject(key), secret, notice: SECRET_NOTICE }, 201);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/keys/:key_id',
      ...doc,
      precheck: accountKey,
      summary: 'One key of the account, with what it was charged this month',
      response: keyWithSpendResponse,
      problems: [403, 404],
    },
    async ({ checked: key }) => reply(await withSpend(key)),
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/revoke',
      audit: { action: 'key.revoked', target: 'key_id' },
      ...doc,
      precheck: accountKey,
      summary: 'Revoke a key: it answers 401 from then on (revoking twice keeps the first time)',
      response: keyResponse,
      problems: [403, 404, 409],
    },
    async ({ checked: key }) => {
      await refuseDashboardKey(key, 'sign out everywhere instead');
      await revokeApiKey(ctx.ledger, key.id);
      return reply(keyObject((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/rotate',
      audit: { action: 'key.rotated', target: 'key_id' },
      ...doc,
      precheck: accountKey,
      summary: 'Rotate a key: a new secret (shown once); the previous one keeps working for the grace period',
      body: rotateRequest,
      optionalBody: true,
      response: keyResponse.extend({ secret: z.string(), notice: z.string() }),
      problems: [403, 404],
    },
    async ({ input: b, checked: key }) => {
      const grace = b.grace_seconds ?? ctx.config.KEY_ROTATION_GRACE_SECONDS;
      if (grace > ctx.config.KEY_ROTATION_GRACE_MAX_SECONDS) {
        throw badRequest('invalid_body', `grace_seconds: at most ${ctx.config.KEY_ROTATION_GRACE_MAX_SECONDS}`, {
          errors: [{ field: 'grace_seconds', message: `at most ${ctx.config.KEY_ROTATION_GRACE_MAX_SECONDS}` }],
        });
      }
      const rotated = await rotateApiKey(ctx.ledger, key.id, grace);
      if (!rotated) throw notFound(`key ${key.id} is revoked: a revoked key cannot be rotated`, 'revoked_key');
      return reply({
        ...keyObject(rotated.key),
        previous_secret_expires_at: rotated.key.previous_expires_at,
        secret: rotated.secret,
        notice: SECRET_NOTICE,
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/limit',
      audit: { action: 'key.hop_limit_changed', target: 'key_id', detail: (a) => pick(a, ['hop_limit', 'hop_period']) },
      ...doc,
      precheck: accountKey,
      summary: "Set a key's hop limit per period (and the period: changing it starts the count again)",
      body: limitRequest,
      response: keyResponse,
      problems: [403, 404],
      example: { hop_limit: 50_000, hop_period: 'month' },
    },
    async ({ input: b, checked: key }) => {
      await setHopLimit(ctx.ledger, key.id, b.hop_limit, b.hop_period);
      return reply(keyObject((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/surface',
      audit: { action: 'key.surface_changed', target: 'key_id', detail: (a) => ({ surface: a.surface ?? null }) },
      ...doc,
      precheck: accountKey,
      summary: "Set the act kinds a key may act on (its declared surface), a preset's, or the default",
      body: surfaceRequest,
      response: keyResponse,
      problems: [403, 404],
      example: { kinds: ['pay', 'refund'] },
    },
    async ({ input: b, checked: key }) => {
      const kinds = b.kinds ? [...new Set(b.kinds)] : b.preset ? [...SURFACE_PRESETS[b.preset]!] : null;
      await setKeySurface(ctx.ledger, key.id, kinds);
      return reply(keyObject((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/reviews',
      ...doc,
      precheck: accountKey,
      summary: "Set how long a review this key's HOLD opens waits for a person (null: REVIEW_TTL_SECONDS); a mandate's own wait still wins",
      body: reviewTtlRequest,
      response: keyResponse,
      problems: [403, 404],
      example: { review_expires_in_seconds: 3600 },
    },
    async ({ input: b, checked: key }) => {
      await setKeyReviewTtl(ctx.ledger, key.id, b.review_expires_in_seconds);
      return reply(keyObject((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/spend-cap',
      audit: { action: 'key.spend_cap_changed', target: 'key_id', detail: (a) => ({ spend_cap_usd: a.spend_cap_usd ?? null }) },
      ...doc,
      precheck: accountKey,
      summary:
        'Set the most a key may be charged per UTC calendar month (null: no cap of its own); past it an act answers 402 spend_cap_reached',
      body: spendCapRequest,
      response: keyWithSpendResponse,
      problems: [400, 403, 404],
      example: { spend_cap_usd: '250.00' },
    },
    async ({ input: b, checked: key }) => {
      await setKeySpendCap(ctx.ledger, key.id, capMicros(b.spend_cap_usd));
      return reply(await withSpend((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/keys/:key_id/expiry',
      audit: { action: 'key.expiry_changed', target: 'key_id', detail: (a) => ({ expires_at: a.expires_at ?? null }) },
      ...doc,
      precheck: accountKey,
      summary: 'Set when a key stops working (null: never); an expired key can be given a later time again',
      body: expiryRequest,
      response: keyResponse,
      problems: [403, 404, 409],
      example: { expires_in_seconds: 2_592_000 },
    },
    async ({ input: b, checked: key }) => {
      await refuseDashboardKey(key, 'it lasts as long as the account');
      const expiresAt = expiryOf(b);
      await setKeyExpiry(ctx.ledger, key.id, expiresAt);
      return reply(keyObject((await getApiKey(ctx.ledger.read, key.id))!));
    },
  );
}

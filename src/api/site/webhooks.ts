/**
 * Webhook subscribers of the trigger rail (SPEC 2.5 layer 4, SPEC 6).
 *   POST /signal/trigger/webhooks   key   subscribe a URL to one trigger, one template, or all of the key's triggers
 *   GET  /signal/trigger/webhooks   key   the key's subscriptions and recent deliveries with every attempt
 *
 * Delivery (our format, after Standard Webhooks, with its asymmetric "v1a" scheme):
 *   POST <url>, body = the event JSON (as in the trigger feed, plus log_index)
 *   webhook-id:        the event id (the same on every retry: deduplicate on it)
 *   webhook-timestamp: Unix seconds of this attempt
 *   webhook-signature: "v1a," + base64(Ed25519(service key, `${webhook-id}.${webhook-timestamp}.${body}`)),
 *                      during a key rotation's overlap followed by " v1a,…" by the previous key
 *   webhook-key-id:    kid of each signature, in the same order, space separated
 *                      (GET /crypto/public-key lists current and retired keys)
 * Any 2xx is success. Otherwise it is retried after WEBHOOK_BACKOFF_MS, doubling (capped at one hour),
 * each delay jittered by ±25%, up to WEBHOOK_MAX_ATTEMPTS (over about 6.4 hours with the defaults). A 410 Gone,
 * or WEBHOOK_DISABLE_AFTER_FAILURES failed attempts in a row, disables the subscription
 * (docs/hardening.md). Deliveries are rows written with their event, so none is lost on restart.
 */
import { signEd25519 } from '../../crypto/ed25519.ts';
import { z } from 'zod';
import { newId, nowIso } from '../../ids.ts';
import { NonPublicTarget, assertPublicTarget, postGuarded } from '../../net/outbound.ts';
import { getTrigger } from '../../ledger/triggers.ts';
import { ownerId } from '../../ledger/accounts.ts';
import {
  claimDue,
  createSubscription,
  deliveriesOf,
  listDisabledSubscriptions,
  listSubscriptions,
  recordAttempt,
  type DueDelivery,
} from '../../ledger/webhooks.ts';
import type { AppContext } from '../context.ts';
import type { BackgroundJob } from '../jobs.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';
import { hostOf } from '../audit.ts';

export const subscribeRequest = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe('where events are POSTed'),
    trigger_id: z
      .string()
      .regex(/^trg_[A-Za-z0-9_-]{1,64}$/, 'a trigger id such as trg_…')
      .optional(),
    template_id: z
      .string()
      .regex(/^[a-z0-9_]{1,64}$/, 'a template id such as ai_model_change')
      .optional(),
  })
  .refine((b) => b.trigger_id === undefined || b.template_id === undefined, {
    message: 'send at most one of trigger_id or template_id',
    path: ['trigger_id'],
  });

const HOUR_MS = 3_600_000;

const subscriptionResponse = z.object({
  object: z.literal('webhook_subscription'),
  id: z.string(),
  url: z.string(),
  trigger_id: z.string().nullable(),
  template_id: z.string().nullable(),
  created_at: z.string(),
  signing: z.object({ scheme: z.string(), public_key_url: z.string() }),
});

/**
 * The wait after failed attempt n: the base doubling per attempt, capped at an
 * hour, times a random factor in [0.75, 1.25) so that subscribers that failed
 * together are not all retried in the same instant.
 */
export function retryDelayMs(n: number, baseMs: number, random = Math.random()): number {
  return Math.round(Math.min(HOUR_MS, baseMs * 2 ** (n - 1)) * (0.75 + random * 0.5));
}

/** The signed content and headers of one delivery attempt. */
export function signDelivery(ctx: AppContext, d: Pick<DueDelivery, 'event_id' | 'body'>, now = Date.now()): Record<string, string> {
  const ts = String(Math.floor(now / 1000));
  const content = Buffer.from(`${d.event_id}.${ts}.${d.body}`, 'utf8');
  const keys = [ctx.keyring.current, ...(ctx.keyring.cosigning ?? [])];
  const signatures = keys.map((k) => `v1a,${signEd25519(content, k.privateKey).toString('base64')}`);
  return {
    'content-type': 'application/json',
    'webhook-id': d.event_id,
    'webhook-timestamp': ts,
    'webhook-signature': signatures.join(' '),
    'webhook-key-id': keys.map((k) => k.kid).join(' '),
  };
}

/** Delivers due webhooks of one process; several processes may run one each on one database (claims are leased). */
/** How a subscription's deliveries are signed, as its create answer says (signDelivery). */
export const deliverySigning = (ctx: AppContext) => ({
  scheme: 'v1a (Ed25519)',
  public_key_url: `${ctx.config.BASE_URL}/crypto/public-key`,
});

export class Deliverer implements BackgroundJob {
  readonly name = 'webhook delivery';
  readonly #ctx: AppContext;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #again = false;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
  }

  start(): void {
    DELIVERERS.add(this);
    this.#timer = setInterval(() => this.nudge(), this.#ctx.config.WEBHOOK_POLL_MS);
    this.#timer.unref();
    this.nudge();
  }

  /** No new round starts; resolves when the round in flight has recorded its attempts. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    DELIVERERS.delete(this);
    await this.#inFlight;
  }

  /** Runs a delivery round now (or right after the current one); nothing once stopped. */
  nudge(): void {
    if (!this.#timer) return;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    this.#inFlight = this.#round()
      .catch((e) => this.#ctx.log('error', 'webhook round failed', { error: String(e) }))
      .finally(() => {
        this.#inFlight = undefined;
        if (this.#again) {
          this.#again = false;
          this.nudge();
        }
      });
  }

  async #round(): Promise<void> {
    const c = this.#ctx.config;
    while (this.#timer) {
      const due = await this.#ctx.ledger.write((tx) => claimDue(tx, Date.now(), c.WEBHOOK_TIMEOUT_MS + 1000, 64));
      if (due.length === 0) return;
      await Promise.all(due.map((d) => this.#attempt(d)));
    }
  }

  async #attempt(d: DueDelivery): Promise<void> {
    const c = this.#ctx.config;
    const started = Date.now();
    let status: number | null = null;
    let error: string | null = null;
    try {
      status = await postGuarded(d.url, {
        headers: signDelivery(this.#ctx, d),
        body: d.body,
        timeoutMs: c.WEBHOOK_TIMEOUT_MS,
        allowPrivate: c.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      });
      if (status < 200 || status >= 300) error = `HTTP ${status}`;
    } catch (e) {
      error = String((e as Error)?.message ?? e).slice(0, 500);
    }
    const ok = error === null;
    const n = d.attempts + 1;
    const gone = status === 410;
    const retryAt = ok || gone || n >= c.WEBHOOK_MAX_ATTEMPTS ? null : Date.now() + retryDelayMs(n, c.WEBHOOK_BACKOFF_MS);
    await this.#ctx.ledger.write((tx) =>
      recordAttempt(tx, d, {
        ok,
        status,
        error,
        durationMs: Date.now() - started,
        retryAt,
        gone,
        disableAfter: c.WEBHOOK_DISABLE_AFTER_FAILURES,
      }),
    );
  }
}

const DELIVERERS = new Set<Deliverer>();

/** Wakes every deliverer of this process (after an event committed). */
export function nudgeDeliverer(): void {
  for (const d of DELIVERERS) d.nudge();
}

/** Refuses a subscriber URL that is not on the public internet (SSRF guard; delivery checks again). */
export async function requirePublicTarget(url: string): Promise<void> {
  try {
    await assertPublicTarget(url);
  } catch (e) {
    const nonPublic = e instanceof NonPublicTarget;
    throw new Problem({
      status: 422,
      code: nonPublic ? 'webhook_target_not_public' : 'webhook_target_unresolvable',
      title: 'Unprocessable content',
      detail: nonPublic
        ? `${(e as Error).message}: webhooks are delivered to public addresses only (an operator may set WEBHOOK_ALLOW_PRIVATE_TARGETS=true)`
        : `the host of ${url} does not resolve (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    });
  }
}

export function registerWebhookRoutes(router: Router, ctx: AppContext): void {
  router.job(new Deliverer(ctx));

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/signal/trigger/webhooks',
      audit: { action: 'webhook.created', detail: (a) => ({ host: hostOf(a.url) }) },
      summary:
        'Subscribe a URL to trigger events (one trigger, one template, or every trigger of the key); deliveries are signed with Ed25519',
      auth: 'key',
      role: 'operator',
      tag: 'triggers',
      body: subscribeRequest,
      response: subscriptionResponse,
      responses: { 201: { description: 'The subscription', schema: subscriptionResponse } },
      problems: [403, 404, 422],
      example: { url: 'https://agent.example/hooks/fusegate', template_id: 'bind_gate_hold' },
    },
    async ({ key, input: body }) => {
      if (body.trigger_id) {
        const t = await getTrigger(ctx.ledger.read, body.trigger_id);
        if (!t || t.key_id !== ownerId(key)) throw notFound(`no trigger ${body.trigger_id}`, 'unknown_trigger');
      }
      if (!ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS) await requirePublicTarget(body.url);
      const sub = {
        id: newId('whs'),
        key_id: ownerId(key),
        url: body.url,
        trigger_id: body.trigger_id ?? null,
        template_id: body.template_id ?? null,
        created_at: nowIso(),
      };
      await ctx.ledger.write((tx) => createSubscription(tx, sub));
      const { key_id: _k, ...view } = sub;
      return reply(
        {
          object: 'webhook_subscription',
          ...view,
          signing: deliverySigning(ctx),
        },
        201,
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/signal/trigger/webhooks',
      summary: "The key's webhook subscriptions (and the disabled ones, with why) and recent deliveries with every attempt",
      auth: 'key',
      tag: 'triggers',
    },
    async ({ key }) => {
      const subs = await listSubscriptions(ctx.ledger.read, ownerId(key));
      const disabled = await listDisabledSubscriptions(ctx.ledger.read, ownerId(key));
      return reply({
        subscriptions: subs.map(({ key_id: _k, ...s }) => s),
        disabled_subscriptions: disabled,
        deliveries: await deliveriesOf(ctx.ledger.read, ownerId(key)),
      });
    },
  );
}

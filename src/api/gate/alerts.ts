/**
 * Alerts (issue 31, docs/alerts.md): webhook events for a fuse's state changes
 * and refused hops, chosen per subscription. Delivered, signed and retried
 * exactly as the trigger rail's webhooks (src/api/site/webhooks.ts).
 *   POST /v1/alerts                      operator   {url, events?, fuse_id?} -> 201 the subscription
 *   GET  /v1/alerts                      any key    the account's subscriptions, removed ones, recent deliveries
 *   POST /v1/alerts/{alert_id}/remove    operator   stops it; its pending deliveries fail
 *   POST /v1/alerts/{alert_id}/test      operator   queues a test event (type alert.test, test: true) for it alone -> 202
 *
 * Events (the delivered body; `webhook-id` is its event_id):
 *   fuse.state_changed  {event_id, type, at, fuse_id, data: {from, to, key_id, receipt_id, verify_url}}
 *   hop.denied          {event_id, type, at, fuse_id, data: {decision, reason, state, act_kind?, tool?, key_id, receipt_id, verify_url}}
 * An event's deliveries are written in the transaction of its act, so none is lost
 * (the events themselves: ./alert-events.ts).
 */
import { z } from 'zod';
import { newId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import {
  ALERT_EVENTS,
  ALERT_TEST_EVENT,
  createAlertSubscription,
  deliveriesOf,
  enqueueTestAlert,
  listAlertSubscriptions,
  listDisabledSubscriptions,
  removeAlertSubscription,
} from '../../ledger/webhooks.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { deliverySigning, nudgeDeliverer, requirePublicTarget } from '../site/webhooks.ts';
import { callerOf, fuseIdSchema, visibleFuse } from './governed.ts';
import { operation } from '../operation.ts';
import { hostOf } from '../audit.ts';

export const createAlertRequest = z.strictObject({
  url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .describe('where events are POSTed'),
  events: z
    .array(z.enum(ALERT_EVENTS, { message: `an alert event: ${ALERT_EVENTS.join(' or ')}` }))
    .min(1, 'choose at least one event')
    .max(ALERT_EVENTS.length)
    .default([...ALERT_EVENTS])
    .describe('which events this URL receives; default all of them'),
  fuse_id: fuseIdSchema.optional().describe("only this fuse's events; default every fuse of the account"),
});

const alertSubscription = z.object({
  object: z.literal('alert_subscription'),
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(ALERT_EVENTS)),
  fuse_id: z.string().nullable(),
  created_at: z.string(),
});
const createdResponse = alertSubscription.extend({ signing: z.object({ scheme: z.string(), public_key_url: z.string() }) });
const delivery = z.object({
  id: z.string(),
  subscription_id: z.string(),
  url: z.string().describe("the endpoint: its subscription's URL"),
  payload: z.unknown().describe('the event as delivered (the signed body)'),
  event_id: z.string(),
  event_type: z.string(),
  state: z.enum(['pending', 'delivered', 'failed']),
  delivered_at: z.string().nullable(),
  attempts: z.array(z.object({ n: z.number(), at: z.string(), status: z.number().nullable(), error: z.string().nullable() })),
});
const listResponse = z.object({
  object: z.literal('list'),
  data: z.array(alertSubscription),
  removed: z.array(z.object({ id: z.string(), url: z.string(), disabled_at: z.string(), disabled_reason: z.string().nullable() })),
  deliveries: z.array(delivery),
});

const idParam = z.string().regex(/^whs_[A-Za-z0-9_-]{1,64}$/, 'an alert subscription id such as whs_…');

export function registerAlertRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/alerts',
      audit: { action: 'alert.created', detail: (a) => ({ host: hostOf(a.url), events: a.events ?? null }) },
      summary:
        "Subscribe a URL to alerts: a fuse's state changes and refused hops, for every fuse of the account or one; signed and retried as trigger webhooks",
      auth: 'key',
      role: 'operator',
      tag: 'alerts',
      body: createAlertRequest,
      response: createdResponse,
      responses: { 201: { description: 'The alert subscription', schema: createdResponse } },
      problems: [403, 404, 422],
      example: { url: 'https://ops.example.com/hooks/fusegate', events: ['fuse.state_changed', 'hop.denied'] },
    },
    async ({ key, input: body }) => {
      if (body.fuse_id) await visibleFuse(ctx.ledger.read, callerOf(key), body.fuse_id);
      if (!ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS) await requirePublicTarget(body.url);
      const sub = {
        id: newId('whs'),
        url: body.url,
        events: ALERT_EVENTS.filter((e) => body.events.includes(e)),
        fuse_id: body.fuse_id ?? null,
        created_at: nowIso(),
      };
      await ctx.ledger.write((tx) => createAlertSubscription(tx, ownerId(key), sub));
      return reply(
        {
          object: 'alert_subscription',
          ...sub,
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
      path: '/v1/alerts',
      summary: "The account's alert subscriptions, the removed or disabled ones with why, and the 50 latest deliveries with every attempt",
      auth: 'key',
      tag: 'alerts',
      response: listResponse,
    },
    async ({ key }) => {
      const owner = ownerId(key);
      const [subs, removed, deliveries] = await Promise.all([
        listAlertSubscriptions(ctx.ledger.read, owner),
        listDisabledSubscriptions(ctx.ledger.read, owner, 'alerts'),
        deliveriesOf(ctx.ledger.read, owner, 50, 'alerts'),
      ]);
      return reply({ object: 'list', data: subs.map((s) => ({ object: 'alert_subscription', ...s })), removed, deliveries });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/alerts/:alert_id/remove',
      audit: { action: 'alert.removed', target: 'alert_id' },
      summary: 'Remove an alert subscription: no more events are queued for it, its pending deliveries fail',
      auth: 'key',
      role: 'operator',
      tag: 'alerts',
      response: z.object({ object: z.literal('alert_subscription'), id: z.string(), removed: z.literal(true) }),
      problems: [403, 404],
    },
    async ({ key, params }) => {
      const raw = String(params.alert_id ?? '');
      const id = idParam.safeParse(raw);
      const removed = id.success && (await ctx.ledger.write((tx) => removeAlertSubscription(tx, ownerId(key), id.data, nowIso())));
      if (!removed) throw notFound(`no alert subscription ${raw}`, 'unknown_alert');
      return reply({ object: 'alert_subscription', id: raw, removed: true });
    },
  );

  const testedResponse = z.object({
    object: z.literal('alert_delivery'),
    id: z.string(),
    subscription_id: z.string(),
    event_id: z.string(),
    event_type: z.literal(ALERT_TEST_EVENT),
    state: z.literal('pending'),
  });
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/alerts/:alert_id/test',
      audit: { action: 'alert.test_sent', target: 'alert_id' },
      summary:
        'Send a test event to an alert subscription: delivered, signed and retried as any event, marked `test: true` (type alert.test)',
      auth: 'key',
      role: 'operator',
      tag: 'alerts',
      response: testedResponse,
      responses: { 202: { description: 'The test delivery, queued', schema: testedResponse } },
      problems: [403, 404],
    },
    async ({ key, params, event }) => {
      const raw = String(params.alert_id ?? '');
      const id = idParam.safeParse(raw);
      const event_id = newId('evt');
      const body = {
        event_id,
        type: ALERT_TEST_EVENT,
        at: nowIso(),
        fuse_id: null,
        test: true,
        data: { subscription_id: raw, note: 'a test event, sent on request: nothing happened to a fuse' },
      };
      const delivery = id.success
        ? await ctx.ledger.write((tx) => enqueueTestAlert(tx, ownerId(key), id.data, { event_id, body }))
        : undefined;
      if (!delivery) throw notFound(`no active alert subscription ${raw}`, 'unknown_alert');
      nudgeDeliverer();
      return reply(
        { object: 'alert_delivery', id: delivery, subscription_id: raw, event_id, event_type: ALERT_TEST_EVENT, state: 'pending' },
        202,
      );
    },
  );
}

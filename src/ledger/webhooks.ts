/**
 * Webhook subscriptions and the durable delivery queue. A delivery row is
 * written in the transaction of its event, so it survives any restart; the
 * deliverer (src/api/site/webhook-deliverer.ts) claims due rows with a lease,
 * so that two processes never send the same attempt at once.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import type { Transaction } from './sql.ts';
import type { InValue } from '@libsql/client';
import { nowIso, sortableTimePrefix } from '../ids.ts';
import type { Db } from './log.ts';

export interface Subscription {
  id: string;
  key_id: string;
  url: string;
  trigger_id: string | null;
  template_id: string | null;
  created_at: string;
}

/**
 * The alert events a subscription may choose (docs/alerts.md): a fuse changed
 * state (blown, charged), or a hop was refused (DENY, BLOCK, SILENCE), a
 * review step, or a key or an account reached 80 % of its monthly spend cap.
 */
export const ALERT_EVENTS = [
  'fuse.state_changed',
  'hop.denied',
  'review.opened',
  'review.decided',
  'review.expired',
  'spend.threshold',
] as const;
export type AlertEventType = (typeof ALERT_EVENTS)[number];

/** Which events a subscription receives: the trigger rail's, or alerts. */
export type SubscriptionKind = 'trigger' | 'alerts';

export interface AlertSubscription {
  id: string;
  url: string;
  events: AlertEventType[];
  fuse_id: string | null;
  created_at: string;
}

/** The `events` column of a kind's subscriptions: 'trigger', or a list of alert events. */
const kindFilter = (kind: SubscriptionKind, alias = '') =>
  kind === 'trigger' ? `${alias}events = 'trigger'` : `${alias}events <> 'trigger'`;

export async function createSubscription(tx: Transaction, s: Subscription): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO webhook_subscriptions (id, key_id, url, trigger_id, template_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [s.id, s.key_id, s.url, s.trigger_id, s.template_id, s.created_at],
  });
}

export async function createAlertSubscription(tx: Transaction, owner: string, s: AlertSubscription): Promise<void> {
  await tx.execute({
    sql: 'INSERT INTO webhook_subscriptions (id, key_id, url, events, fuse_id, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    args: [s.id, owner, s.url, s.events.join(' '), s.fuse_id, s.created_at],
  });
}

export async function listSubscriptions(db: Db, keyId: string): Promise<Subscription[]> {
  const rs = await db.execute({
    sql: `SELECT id, key_id, url, trigger_id, template_id, created_at FROM webhook_subscriptions WHERE key_id = ? AND disabled_at IS NULL AND ${kindFilter('trigger')} ORDER BY created_at`,
    args: [keyId],
  });
  return rs.rows.map((r) => ({
    id: String(r.id),
    key_id: String(r.key_id),
    url: String(r.url),
    trigger_id: r.trigger_id === null ? null : String(r.trigger_id),
    template_id: r.template_id === null ? null : String(r.template_id),
    created_at: String(r.created_at),
  }));
}

/** The account's active alert subscriptions, oldest first. */
export async function listAlertSubscriptions(db: Db, owner: string): Promise<AlertSubscription[]> {
  const rs = await db.execute({
    sql: `SELECT id, url, events, fuse_id, created_at FROM webhook_subscriptions WHERE key_id = ? AND disabled_at IS NULL AND ${kindFilter('alerts')} ORDER BY created_at`,
    args: [owner],
  });
  return rs.rows.map((r) => ({
    id: String(r.id),
    url: String(r.url),
    events: String(r.events).split(' ') as AlertEventType[],
    fuse_id: r.fuse_id === null ? null : String(r.fuse_id),
    created_at: String(r.created_at),
  }));
}

/**
 * Removes one of the account's alert subscriptions: it is disabled (kept, with
 * why) and its pending deliveries are failed. False when there is no such
 * active alert subscription of the account.
 */
export async function removeAlertSubscription(tx: Transaction, owner: string, id: string, at: string): Promise<boolean> {
  const rs = await tx.execute({
    sql: `UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = 'removed by the account' WHERE id = ? AND key_id = ? AND disabled_at IS NULL AND ${kindFilter('alerts')}`,
    args: [at, id, owner],
  });
  if (rs.rowsAffected === 0) return false;
  await tx.execute({
    sql: "UPDATE webhook_deliveries SET state = 'failed', last_error = 'subscription removed by the account' WHERE subscription_id = ? AND state = 'pending'",
    args: [id],
  });
  return true;
}

/**
 * Disables every webhook subscription of a deleted account, alerts and trigger
 * webhooks alike (kept, with why), and fails their pending deliveries: nothing
 * is sent on behalf of an account that no longer exists. Returns how many it disabled.
 */
export async function disableAccountSubscriptions(tx: Transaction, owner: string, at: string): Promise<number> {
  const reason = 'the account was deleted';
  await tx.execute({
    sql: `UPDATE webhook_deliveries SET state = 'failed', last_error = ?
          WHERE state = 'pending' AND subscription_id IN (SELECT id FROM webhook_subscriptions WHERE key_id = ? AND disabled_at IS NULL)`,
    args: [`subscription disabled: ${reason}`, owner],
  });
  const rs = await tx.execute({
    sql: 'UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = ? WHERE key_id = ? AND disabled_at IS NULL',
    args: [at, reason, owner],
  });
  return rs.rowsAffected;
}

/** One alert event of an account, queued for its matching subscriptions in the act's transaction. */
export interface AlertEvent {
  /** The account (owner id) whose subscriptions receive it. */
  owner: string;
  event_id: string;
  type: AlertEventType;
  /** The fuse it concerns; null for a review of a request that named none (then only the subscriptions to every fuse receive it). */
  fuse_id: string | null;
  /** The delivered JSON body. */
  body: Record<string, unknown>;
}

/** An event to queue: its owner (whose subscriptions may receive it), its row of `ev` after the owner, made only if it has one. */
interface QueuedEvent {
  owner: string;
  row: () => InValue[];
}

/**
 * Queues one delivery per (event, matching subscription) in one statement,
 * whatever the number of events: each event's row of `ev` is (owner,
 * event_id, type, body) and then `columns`, which `match` (SQL over `ev.` and
 * the subscription `s.`) reads. The owners with an active subscription of the
 * kind are read first, so the events of owners with none (most acts) cost one
 * index seek each and no row. Delivery ids put the time first, as sortable ids
 * do (ids.ts), so that a group's deliveries land together.
 */
async function insertDeliveries(
  tx: Transaction,
  kind: SubscriptionKind,
  columns: readonly string[],
  events: readonly QueuedEvent[],
  match: string,
): Promise<void> {
  if (events.length === 0) return;
  const owned = tx.dialect.oneOf('key_id', [...new Set(events.map((e) => e.owner))]);
  const subscribed = await tx.execute({
    sql: `SELECT DISTINCT key_id FROM webhook_subscriptions WHERE ${owned.sql} AND disabled_at IS NULL AND ${kindFilter(kind)}`,
    args: owned.args,
  });
  if (subscribed.rows.length === 0) return;
  const owners = new Set(subscribed.rows.map((r) => String(r.key_id)));
  const rows = events.filter((e) => owners.has(e.owner)).map((e) => [e.owner, ...e.row()]);
  const now = Date.now();
  const ev = tx.dialect.tuples('ev', ['owner', 'event_id', 'type', 'body', ...columns], rows);
  await tx.execute({
    sql: `INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, body, state, attempts, next_attempt_at, created_at)
          SELECT 'whd_' || ? || ${tx.dialect.randomHex}, s.id, ev.event_id, ev.type, ev.body, 'pending', 0, ?, ?
          FROM ${ev.sql} JOIN webhook_subscriptions s ON s.key_id = ev.owner
          WHERE s.disabled_at IS NULL AND ${kindFilter(kind, 's.')} AND ${match}`,
    args: [sortableTimePrefix(now), now, nowIso(), ...ev.args],
  });
}

/**
 * Queues one delivery per (event, matching subscription): the account's active
 * alert subscriptions that chose the event's type, for every fuse or this one.
 */
export async function enqueueAlerts(tx: Transaction, events: readonly AlertEvent[]): Promise<void> {
  await insertDeliveries(
    tx,
    'alerts',
    ['fuse_id'],
    events.map((e) => ({ owner: e.owner, row: () => [e.event_id, e.type, JSON.stringify(e.body), e.fuse_id] })),
    "(' ' || s.events || ' ') LIKE ('% ' || ev.type || ' %') AND (s.fuse_id IS NULL OR s.fuse_id = ev.fuse_id)",
  );
}

/**
 * Queues a test event for one active alert subscription of `owner`, to be
 * delivered, signed and retried as any other: its delivery id, or undefined
 * when the owner has no such active subscription.
 * The event's type is `alert.test` and its body says `test: true`.
 */
export async function enqueueTestAlert(
  tx: Transaction,
  owner: string,
  subscriptionId: string,
  event: { event_id: string; body: unknown },
): Promise<string | undefined> {
  const now = Date.now();
  const id = `whd_${sortableTimePrefix(now)}${event.event_id.slice(-8)}`;
  const rs = await tx.execute({
    sql: `INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, body, state, attempts, next_attempt_at, created_at)
          SELECT ?, s.id, ?, ?, ?, 'pending', 0, ?, ? FROM webhook_subscriptions s
          WHERE s.id = ? AND s.key_id = ? AND s.disabled_at IS NULL AND ${kindFilter('alerts', 's.')}`,
    args: [id, event.event_id, ALERT_TEST_EVENT, JSON.stringify(event.body), now, nowIso(), subscriptionId, owner],
  });
  return rs.rowsAffected === 1 ? id : undefined;
}

/** The type of the event "send test event" delivers; no subscription chooses it, each receives it on request. */
export const ALERT_TEST_EVENT = 'alert.test';

/** An alert event (a fuse's state change, a refused hop): its webhook deliveries to the account's matching subscriptions. Written with its group's records (records.ts). */
export const ALERT_DELIVERIES: RecordWriter<AlertEvent> = recordWriter('webhook_deliveries', enqueueAlerts);

/** The key's disabled subscriptions, newest first, with when and why (docs/hardening.md). */
export async function listDisabledSubscriptions(
  db: Db,
  keyId: string,
  kind: SubscriptionKind = 'trigger',
): Promise<Array<{ id: string; url: string; disabled_at: string; disabled_reason: string | null }>> {
  const rs = await db.execute({
    sql: `SELECT id, url, disabled_at, disabled_reason FROM webhook_subscriptions WHERE key_id = ? AND disabled_at IS NOT NULL AND ${kindFilter(kind)} ORDER BY disabled_at DESC`,
    args: [keyId],
  });
  return rs.rows.map((r) => ({
    id: String(r.id),
    url: String(r.url),
    disabled_at: String(r.disabled_at),
    disabled_reason: r.disabled_reason === null ? null : String(r.disabled_reason),
  }));
}

/** A trigger rail event to deliver to the subscribers of its key that match its trigger, its template, or everything. */
export interface TriggerDelivery {
  keyId: string;
  match: { trigger_id: string; template_id: string };
  event: { id: string; type: string; body: unknown };
}

/** Queues one delivery per matching subscriber of each event. */
export async function enqueueDeliveries(tx: Transaction, deliveries: readonly TriggerDelivery[]): Promise<void> {
  await insertDeliveries(
    tx,
    'trigger',
    ['trigger_id', 'template_id'],
    deliveries.map((d) => ({
      owner: d.keyId,
      row: () => [d.event.id, d.event.type, JSON.stringify(d.event.body), d.match.trigger_id, d.match.template_id],
    })),
    '(s.trigger_id = ev.trigger_id OR s.template_id = ev.template_id OR (s.trigger_id IS NULL AND s.template_id IS NULL))',
  );
}

export interface DueDelivery {
  id: string;
  subscription_id: string;
  url: string;
  event_id: string;
  event_type: string;
  body: string;
  attempts: number;
}

/** Claims up to `limit` due deliveries: their next attempt moves `leaseMs` ahead, so no other worker takes them meanwhile. */
export async function claimDue(tx: Transaction, now: number, leaseMs: number, limit: number): Promise<DueDelivery[]> {
  const rs = await tx.execute({
    sql: `SELECT d.id, d.subscription_id, s.url, d.event_id, d.event_type, d.body, d.attempts FROM webhook_deliveries d
          JOIN webhook_subscriptions s ON s.id = d.subscription_id
          WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND s.disabled_at IS NULL ORDER BY d.next_attempt_at LIMIT ?`,
    args: [now, limit],
  });
  for (const r of rs.rows) {
    await tx.execute({ sql: 'UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ?', args: [now + leaseMs, String(r.id)] });
  }
  return rs.rows.map((r) => ({
    id: String(r.id),
    subscription_id: String(r.subscription_id),
    url: String(r.url),
    event_id: String(r.event_id),
    event_type: String(r.event_type),
    body: String(r.body),
    attempts: Number(r.attempts),
  }));
}

export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
  /** When to try again (epoch ms), or null to give up. Ignored when ok. */
  retryAt: number | null;
  /** The subscriber answered 410 Gone: disable the subscription now. */
  gone?: boolean;
  /** Failed attempts in a row (since the subscription's last success) that disable it. */
  disableAfter: number;
}

export async function recordAttempt(tx: Transaction, d: DueDelivery, o: AttemptOutcome): Promise<void> {
  const n = d.attempts + 1;
  const at = nowIso();
  await tx.execute({
    sql: 'INSERT INTO webhook_attempts (delivery_id, n, at, status, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?)',
    args: [d.id, n, at, o.status, o.error, o.durationMs],
  });
  const state = o.ok ? 'delivered' : o.retryAt === null ? 'failed' : 'pending';
  await tx.execute({
    sql: `UPDATE webhook_deliveries SET attempts = ?, state = ?, last_status = ?, last_error = ?, next_attempt_at = ?, delivered_at = ? WHERE id = ?`,
    args: [n, state, o.status, o.error, o.retryAt ?? 0, o.ok ? at : null, d.id],
  });
  if (o.ok) {
    await tx.execute({ sql: 'UPDATE webhook_subscriptions SET consecutive_failures = 0 WHERE id = ?', args: [d.subscription_id] });
    return;
  }
  const rs = await tx.execute({
    sql: 'UPDATE webhook_subscriptions SET consecutive_failures = consecutive_failures + 1 WHERE id = ? RETURNING consecutive_failures',
    args: [d.subscription_id],
  });
  const failures = Number(rs.rows[0]?.consecutive_failures ?? 0);
  const reason = o.gone ? 'the subscriber answered 410 Gone' : failures >= o.disableAfter ? `${failures} failed attempts in a row` : null;
  if (reason === null) {
    // The subscription was disabled while this attempt was in flight (another delivery's failure):
    // nothing will retry it, so it fails now rather than stay pending for ever.
    await tx.execute({
      sql: `UPDATE webhook_deliveries SET state = 'failed', last_error = (SELECT 'subscription disabled: ' || COALESCE(disabled_reason, '') FROM webhook_subscriptions WHERE id = ?)
            WHERE id = ? AND state = 'pending' AND EXISTS (SELECT 1 FROM webhook_subscriptions WHERE id = ? AND disabled_at IS NOT NULL)`,
      args: [d.subscription_id, d.id, d.subscription_id],
    });
    return;
  }
  await tx.execute({
    sql: 'UPDATE webhook_subscriptions SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL',
    args: [at, reason, d.subscription_id],
  });
  // Its other pending deliveries will not be attempted: say so rather than leave them pending.
  await tx.execute({
    sql: "UPDATE webhook_deliveries SET state = 'failed', last_error = ? WHERE subscription_id = ? AND state = 'pending'",
    args: [`subscription disabled: ${reason}`, d.subscription_id],
  });
}

export interface DeliveryView {
  id: string;
  subscription_id: string;
  /** The endpoint it goes to: its subscription's URL. */
  url: string;
  /** The event as delivered (the signed body). */
  payload: unknown;
  event_id: string;
  event_type: string;
  state: string;
  attempts: Array<{ n: number; at: string; status: number | null; error: string | null }>;
  delivered_at: string | null;
}

export async function deliveriesOf(db: Db, keyId: string, limit = 100, kind: SubscriptionKind = 'trigger'): Promise<DeliveryView[]> {
  const rs = await db.execute({
    sql: `SELECT d.id, d.subscription_id, s.url, d.event_id, d.event_type, d.body, d.state, d.delivered_at FROM webhook_deliveries d
          JOIN webhook_subscriptions s ON s.id = d.subscription_id WHERE s.key_id = ? AND ${kindFilter(kind, 's.')} ORDER BY d.created_at DESC, d.rowid DESC LIMIT ?`,
    args: [keyId, limit],
  });
  const out: DeliveryView[] = [];
  for (const r of rs.rows) {
    const a = await db.execute({
      sql: 'SELECT n, at, status, error FROM webhook_attempts WHERE delivery_id = ? ORDER BY n',
      args: [String(r.id)],
    });
    out.push({
      id: String(r.id),
      subscription_id: String(r.subscription_id),
      url: String(r.url),
      payload: JSON.parse(String(r.body)) as unknown,
      event_id: String(r.event_id),
      event_type: String(r.event_type),
      state: String(r.state),
      delivered_at: r.delivered_at === null ? null : String(r.delivered_at),
      attempts: a.rows.map((x) => ({
        n: Number(x.n),
        at: String(x.at),
        status: x.status === null ? null : Number(x.status),
        error: x.error === null ? null : String(x.error),
      })),
    });
  }
  return out;
}

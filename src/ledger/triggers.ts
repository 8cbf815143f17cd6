/**
 * Triggers of the trigger rail: ARMED on publish, FIRED once. Every publish and
 * fire appends an event leaf to the `triggers` log (the public feed) and queues
 * one webhook delivery per matching subscriber, in the same transaction.
 */
import { recordWriter, type RecordWriter } from './records.ts';
import { insertRows, type Transaction } from './sql.ts';
import type { Threshold, TriggerState } from '../domain/trigger.ts';
import { newId } from '../ids.ts';
import { leafBytes } from './astl.ts';
import { appendLeaf, type Db, type Inclusion } from './log.ts';
import { enqueueDeliveries, type TriggerDelivery } from './webhooks.ts';
import { exactSum, exactSumSql } from './exact-sum.ts';

export const TRIGGERS_LOG = 'triggers';

export interface Obligation {
  callable_actions: string[];
  exposure_ceiling_usd: number;
  fee_bps: number | null;
  regulatory_hooks: string[];
}

export interface Trigger {
  id: string;
  key_id: string;
  template_id: string;
  state: TriggerState;
  obligation: Obligation;
  threshold: Threshold;
  enabled_exposure_micros: number;
  published_at: string;
  fired_at: string | null;
  fire: Record<string, unknown> | null;
  fee_micros: number | null;
}

function toTrigger(r: Record<string, unknown>): Trigger {
  return {
    id: String(r.id),
    key_id: String(r.key_id),
    template_id: String(r.template_id),
    state: String(r.state) as TriggerState,
    obligation: JSON.parse(String(r.obligation)) as Obligation,
    threshold: JSON.parse(String(r.threshold)) as Threshold,
    enabled_exposure_micros: Number(r.enabled_exposure_micros),
    published_at: String(r.published_at),
    fired_at: r.fired_at === null ? null : String(r.fired_at),
    fire: r.fire === null ? null : (JSON.parse(String(r.fire)) as Record<string, unknown>),
    fee_micros: r.fee_micros === null ? null : Number(r.fee_micros),
  };
}

export async function getTrigger(db: Db, id: string): Promise<Trigger | undefined> {
  const rs = await db.execute({ sql: 'SELECT * FROM triggers WHERE id = ?', args: [id] });
  return rs.rows[0] ? toTrigger(rs.rows[0] as unknown as Record<string, unknown>) : undefined;
}

/** A trigger rail event: the feed leaf and the webhook body are the same canonical JSON. */
export interface TriggerEvent {
  event_id: string;
  type: 'trigger.published' | 'trigger.fired';
  trigger_id: string;
  template_id: string;
  state: TriggerState;
  at: string;
  data: Record<string, unknown>;
}

/** An event's webhook deliveries, its body naming the index the event has in the `triggers` log. */
const deliveryOf = (keyId: string, e: TriggerEvent, logIndex: number): TriggerDelivery => ({
  keyId,
  match: { trigger_id: e.trigger_id, template_id: e.template_id },
  event: { id: e.event_id, type: e.type, body: { ...e, log_index: logIndex } },
});

/** Appends the event to the `triggers` log and queues its webhook deliveries (a fire, by statements of its own). */
export async function recordEvent(tx: Transaction, keyId: string, e: TriggerEvent): Promise<Inclusion> {
  const appended = await appendLeaf(tx, TRIGGERS_LOG, leafBytes(e));
  await enqueueDeliveries(tx, [deliveryOf(keyId, e, appended.index)]);
  return appended;
}

/**
 * A published trigger, recorded with its group (records.ts): its row, and its
 * event's webhook deliveries (the event itself is the act's entry in the
 * `triggers` log, `state.append`). A fire reads a trigger under the lock, but
 * only by the id a publish's answer gave: no act of the recording group can
 * name it.
 */
export interface PublishedTriggerRow {
  trigger: Trigger;
  event: TriggerEvent;
  logIndex: number;
}

export async function insertPublishedTriggers(tx: Transaction, rows: readonly PublishedTriggerRow[]): Promise<void> {
  await insertRows(
    tx,
    'triggers',
    ['id', 'key_id', 'template_id', 'state', 'obligation', 'threshold', 'enabled_exposure_micros', 'published_at'],
    rows.map(({ trigger: t }) => [
      t.id,
      t.key_id,
      t.template_id,
      'ARMED',
      JSON.stringify(t.obligation),
      JSON.stringify(t.threshold),
      t.enabled_exposure_micros,
      t.published_at,
    ]),
  );
  await enqueueDeliveries(
    tx,
    rows.map((r) => deliveryOf(r.trigger.key_id, r.event, r.logIndex)),
  );
}

/** A published trigger and its event's webhook deliveries (a fire reads it only by the id the answer gave). Written with its group's records (records.ts). */
export const PUBLISHED_TRIGGERS: RecordWriter<PublishedTriggerRow> = recordWriter('triggers', insertPublishedTriggers);

/** ARMED -> FIRED, once: false when the trigger is not ARMED any more (a second fire). */
export async function markFired(
  tx: Transaction,
  id: string,
  at: string,
  fire: Record<string, unknown>,
  feeMicros: number,
): Promise<boolean> {
  const rs = await tx.execute({
    sql: "UPDATE triggers SET state = 'FIRED', fired_at = ?, fire = ?, fee_micros = ? WHERE id = ? AND state = 'ARMED'",
    args: [at, JSON.stringify(fire), feeMicros, id],
  });
  return rs.rowsAffected === 1;
}

/** Enabled exposure (micro-USD) the key's triggers fired since `since` (the month's cleared exposure). */
export async function firedExposureSince(db: Db, keyId: string, since: string): Promise<bigint> {
  const rs = await db.execute({
    sql: `SELECT ${exactSumSql('enabled_exposure_micros', 'm')} FROM triggers WHERE key_id = ? AND state = 'FIRED' AND fired_at >= ?`,
    args: [keyId, since],
  });
  return exactSum(rs.rows[0], 'm');
}

export async function recentFires(db: Db, limit: number): Promise<Trigger[]> {
  const rs = await db.execute({ sql: "SELECT * FROM triggers WHERE state = 'FIRED' ORDER BY fired_at DESC LIMIT ?", args: [limit] });
  return rs.rows.map((r) => toTrigger(r as unknown as Record<string, unknown>));
}

export const newEventId = () => newId('evt');

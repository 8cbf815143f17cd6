/**
 * Rows an act declares among its writes instead of inserting them itself: the
 * record of what it did in its area (a clear act counted, an ORN event, a spoliation
 * seal, a conformity pack, a foundry run, the webhook deliveries of an alert,
 * a PAS job's receipt, an issued bind ticket, a manual-underwriting issue,
 * an ASTL manifest, a sealed oracle aggregate, a published trigger). acts.ts
 * writes every act's records after the group's decisions, with one multi-row
 * statement per table, so such an act costs no statement of its own. An act
 * whose decision must claim its area's rows under the lock (a single-use
 * ticket, a chain) sends its own.
 *
 * The rule that keeps this exact: records are written after every act of the
 * group has decided, so an act cannot read those of the acts before it. So a
 * table listed here is either never read by an act's decision under the lock
 * (most: read only on the read connection, by GET routes and by the operator
 * checkout for a month already closed), or read only through a GroupReader
 * whose acts set the row they record (`state.setRow`, ledger/acts.ts): the
 * ASTL manifests, whose entity heads decide the next version, and the bind
 * tickets, which make their licence parent ARMED for the pre-binds after them
 * (ledger/pas.ts licenseStateOf).
 */
import { insertManifests, type ManifestRow } from './astl.ts';
import { addClearActs, type ClearActRow } from './clear.ts';
import { insertOpenings, type OpeningRow } from './commitments.ts';
import { insertConformityPacks, type ConformityPackRow } from './conformity.ts';
import { insertFoundryRuns, type FoundryRunRow } from './foundry.ts';
import { insertSpoliationSeals, type SpoliationSealRow } from './nap.ts';
import { insertAggregates, type StoredAggregate } from './oracle.ts';
import { insertOrnEvents, type OrnEventRow } from './orn.ts';
import { insertIssues, insertJobReceipts, insertTickets, type IssueRow, type JobReceiptRow, type Ticket } from './pas.ts';
import type { Transaction } from './sql.ts';
import { insertPublishedTriggers, type PublishedTriggerRow } from './triggers.ts';
import { enqueueAlerts, type AlertEvent } from './webhooks.ts';

export type ActRecord =
  /** An execute-gate answer or a pre-finality GO, added to its month's clear counters. */
  | { table: 'clear_counters'; row: ClearActRow }
  | { table: 'orn_events'; row: OrnEventRow }
  | { table: 'spoliation_seals'; row: SpoliationSealRow }
  | { table: 'conformity_packs'; row: ConformityPackRow }
  | { table: 'foundry_runs'; row: FoundryRunRow }
  /** An alert event (a fuse's state change, a refused hop): its webhook deliveries to the account's matching subscriptions. */
  | { table: 'webhook_deliveries'; row: AlertEvent }
  /** The opening of a commitment that stands for caller free text in the act's public receipt. */
  | { table: 'commitment_openings'; row: OpeningRow }
  /**
   * A sealed oracle aggregate. A trigger fire reads one under the lock, but only by the id its answer
   * gave: no act of the group that records it can name it yet.
   */
  | { table: 'oracle_aggregates'; row: StoredAggregate }
  /** A published trigger and its event's webhook deliveries (a fire reads it only by the id the answer gave). */
  | { table: 'triggers'; row: PublishedTriggerRow }
  /** A PAS act's receipt listed under its job (read only outside the lock, by GET /v1/pas/bind-appendix). */
  | { table: 'pas_job_receipt_lists'; row: JobReceiptRow }
  /**
   * A bind ticket a pre-bind issued. A redeem reads one only by the id the answer gave; the
   * pre-binds after it in the group learn of it by `state.setRow` (ledger/pas.ts GROUP_ISSUED_JOBS).
   */
  | { table: 'pas_tickets'; row: Omit<Ticket, 'redeemed_at'> }
  /** A manual-underwriting issue a pre-bind raised (a HOLD); no act reads it. */
  | { table: 'pas_issues'; row: IssueRow }
  /** A published ASTL manifest's row (its entity's head is set for the group's later publishes by `state.setRow`). */
  | { table: 'astl_manifests'; row: ManifestRow };

type Table = ActRecord['table'];
type RowOf<T extends Table> = Extract<ActRecord, { table: T }>['row'];

const WRITERS: { [T in Table]: (tx: Transaction, rows: Array<RowOf<T>>) => Promise<void> } = {
  clear_counters: addClearActs,
  orn_events: insertOrnEvents,
  oracle_aggregates: insertAggregates,
  triggers: insertPublishedTriggers,
  spoliation_seals: insertSpoliationSeals,
  conformity_packs: insertConformityPacks,
  foundry_runs: insertFoundryRuns,
  webhook_deliveries: enqueueAlerts,
  commitment_openings: insertOpenings,
  pas_job_receipt_lists: insertJobReceipts,
  pas_tickets: insertTickets,
  pas_issues: insertIssues,
  astl_manifests: insertManifests,
};

/** Writes `records` in order within each table: one multi-row statement per table present. */
export async function writeRecords(tx: Transaction, records: readonly ActRecord[]): Promise<void> {
  const byTable = new Map<Table, unknown[]>();
  for (const r of records) {
    let rows = byTable.get(r.table);
    if (!rows) byTable.set(r.table, (rows = []));
    rows.push(r.row);
  }
  for (const [table, rows] of byTable) await (WRITERS[table] as (tx: Transaction, rows: unknown[]) => Promise<void>)(tx, rows);
}

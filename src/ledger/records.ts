/**
 * Rows an act declares among its writes instead of inserting them itself: the
 * record of what it did in its area (a clear act counted, an ORN event, a spoliation
 * seal, a conformity pack, a foundry run, the webhook deliveries of an alert,
 * a PAS job's receipt, an issued bind ticket, a manual-underwriting issue,
 * an ASTL manifest, a sealed oracle aggregate, a published trigger). acts.ts
 * writes every act's records after the group's decisions, with one multi-row
 * statement per writer, so such an act costs no statement of its own. An act
 * whose decision must claim its area's rows under the lock (a single-use
 * ticket, a chain) sends its own.
 *
 * Each record names its writer, which its area module declares beside the
 * table it writes (`ASTL_MANIFESTS` in astl.ts, `PAS_TICKETS` in pas.ts...):
 * the act pipeline knows no area.
 *
 * The rule that keeps this exact: records are written after every act of the
 * group has decided, so an act cannot read those of the acts before it. So a
 * table written here is either never read by an act's decision under the lock
 * (most: read only on the read connection, by GET routes and by the operator
 * checkout for a month already closed), or read only through a GroupReader
 * whose acts set the row they record (`state.setRow`, ledger/acts.ts): the
 * ASTL manifests, whose entity heads decide the next version, and the bind
 * tickets, which make their licence parent ARMED for the pre-binds after them
 * (ledger/pas.ts licenseStateOf).
 */
import type { Transaction } from './sql.ts';

/** How an area writes a group's records of one kind: one multi-row statement for all of them. */
export interface RecordWriter<R> {
  /** The table written (for messages). */
  readonly table: string;
  write(tx: Transaction, rows: R[]): Promise<void>;
}

export function recordWriter<R>(table: string, write: (tx: Transaction, rows: readonly R[]) => Promise<void>): RecordWriter<R> {
  return { table, write };
}

export interface ActRecord<R = unknown> {
  readonly writer: RecordWriter<R>;
  readonly row: R;
}

/** A record of `writer`'s kind. */
export function record<R>(writer: RecordWriter<R>, row: R): ActRecord<R> {
  return { writer, row };
}

/** Writes `records` in order within each writer: one call (one multi-row statement) per writer present. */
export async function writeRecords(tx: Transaction, records: readonly ActRecord[]): Promise<void> {
  const byWriter = new Map<RecordWriter<unknown>, unknown[]>();
  for (const r of records) {
    let rows = byWriter.get(r.writer);
    if (!rows) byWriter.set(r.writer, (rows = []));
    rows.push(r.row);
  }
  for (const [writer, rows] of byWriter) await writer.write(tx, rows);
}

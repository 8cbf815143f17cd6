/**
 * The shape every companion-site metered write shares: an act of the pipeline
 * (api/act.ts) that mints its receipt under the write lock (batch-sealed
 * unless the act hands out a self-contained JWS), stating its charges, and
 * commits the area's state, the receipt and the idempotent answer in one
 * transaction, with the acts queued beside it.
 */
import { COMMITMENT_OPENINGS } from '../../ledger/commitments.ts';
import type { Transaction } from '../../ledger/sql.ts';
import type { H3Event } from 'h3';
import type { BilledLine } from '../charges.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import { type ActRecord, record } from '../../ledger/records.ts';
import type { Receipt, ReceiptInput } from '../../ledger/receipts.ts';
import { commitAct } from '../act.ts';
import { commit, type Opening } from '../../crypto/commitment.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { nowIso } from '../../ids.ts';
import type { AppContext } from '../context.ts';
import type { Reply } from '../reply.ts';

/** A line the route billed from its declaration (its handler's `bill(sku)`, api/charges.ts): never priced here. */
export type MeterLine = Readonly<BilledLine>;

export { chargeView } from '../charge.ts';

/** The receipt fields every metered act shares. */
export function receiptFields(r: Receipt): { receipt_id: string; verify_url: string } {
  return { receipt_id: r.receipt_id, verify_url: r.verify_url };
}

/**
 * Commits `write` (the area's state change and answer) with the receipt of
 * `input` for `key`, which states the charges, together. `write` may
 * throw a Problem: then nothing of the act is written or charged. With
 * `signed`, the receipt carries its own JWS (for a token the caller presents
 * elsewhere, e.g. the execute-gate receipt); otherwise it is batch-sealed.
 * An act that writes nothing of its own but the record of what it did uses
 * `meteredAct`.
 */
export async function meteredWrite(
  event: H3Event,
  ctx: AppContext,
  key: ApiKey,
  input: Omit<ReceiptInput, 'key_id'>,
  charges: readonly MeterLine[],
  write: (tx: Transaction, receipt: Receipt) => Promise<Reply>,
  opts: { signed?: boolean; commit?: readonly string[] | Committed } = {},
): Promise<Reply> {
  // `commit` names the paths to commit, or is the input committed already (a receipt whose other facts are computed from its commitments).
  const c = opts.commit && 'openings' in opts.commit ? opts.commit : committed(input, opts.commit ?? []);
  return commitAct(event, ctx, key, {
    run: async (tx, state) => {
      const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { signed: opts.signed ?? false, charges: chargesOf(key, charges) });
      return { reply: await write(tx, receipt), writes: { receipt, records: openingRecords(ownerId(key), receipt, c.openings) } };
    },
  });
}

/**
 * A metered act decided purely: `make` gives its answer and, if it keeps one,
 * the record of what it did in its area (ledger/records.ts). Nothing is read
 * or claimed under the lock, so the act costs no statement of its own: its
 * record is written multi-row with its group's receipts and charges.
 */
export async function meteredAct(
  event: H3Event,
  ctx: AppContext,
  key: ApiKey,
  input: Omit<ReceiptInput, 'key_id'>,
  charges: readonly MeterLine[],
  make: (receipt: Receipt) => { record?: ActRecord; reply: Reply },
  opts: { commit?: readonly string[] } = {},
): Promise<Reply> {
  const c = committed(input, opts.commit ?? []);
  return commitAct(event, ctx, key, {
    decide(state) {
      const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { charges: chargesOf(key, charges) });
      const { record, reply } = make(receipt);
      return { reply, writes: { receipt, records: [...(record ? [record] : []), ...openingRecords(ownerId(key), receipt, c.openings)] } };
    },
  });
}

/** A receipt input with caller text replaced by commitments, and the openings of those commitments. */
export interface Committed<I extends Omit<ReceiptInput, 'key_id'> = Omit<ReceiptInput, 'key_id'>> {
  input: I;
  openings: Array<{ field: string; opening: Opening }>;
}

/**
 * The receipt input with the caller free text at `paths` replaced by salted
 * commitments (docs/public-log.md), and their openings. A path is dotted from
 * the input ("subject", "data.reason"); `*` walks every item of an array
 * ("data.evidence.*.name"). A path with nothing there is skipped.
 */
export function committed<I extends Omit<ReceiptInput, 'key_id'>>(input: I, paths: readonly string[]): Committed<I> {
  if (paths.length === 0) return { input, openings: [] };
  const copy = structuredClone(input) as Record<string, unknown>;
  const openings: Array<{ field: string; opening: Opening }> = [];
  const walk = (node: unknown, parts: readonly string[], at: string[]) => {
    if (node === null || typeof node !== 'object') return;
    const [head, ...rest] = parts as [string, ...string[]];
    const keys = head === '*' ? (Array.isArray(node) ? node.map((_, i) => String(i)) : []) : [head];
    for (const k of keys) {
      const obj = node as Record<string, unknown>;
      if (obj[k] === undefined) continue;
      if (rest.length) walk(obj[k], rest, [...at, k]);
      else {
        const opening = commit(obj[k]);
        obj[k] = opening.commitment;
        openings.push({ field: [...at, k].join('.'), opening });
      }
    }
  };
  for (const p of paths) walk(copy, p.split('.'), []);
  // A plain hash of the request would let anyone test guesses of the text: the fingerprint is
  // taken over the receipt's subject and data as committed instead.
  if (openings.length && copy.fingerprint !== undefined) copy.fingerprint = committedFingerprint(copy);
  return { input: copy as I, openings };
}

/** The fingerprint of a receipt that commits caller text: the SHA-256 of the canonical JSON of its subject and data, as committed. */
export const committedFingerprint = (input: Pick<ReceiptInput, 'subject' | 'data'>): string => fingerprint({ subject: input.subject, data: input.data });

/** The openings of a receipt's commitments, as records written with its act: read later only by `owner`'s account. */
export function openingRecords(owner: string, receipt: Receipt, openings: Committed['openings']): ActRecord[] {
  const at = nowIso();
  return openings.map(({ field, opening }) =>
    record(COMMITMENT_OPENINGS, { receiptId: receipt.receipt_id, field, accountId: owner, commitment: opening.commitment, salt: opening.salt, value: opening.value, createdAt: at }),
  );
}


const chargesOf = (key: ApiKey, charges: readonly MeterLine[]) => charges.map((c) => ({ keyId: key.id, ...c }));

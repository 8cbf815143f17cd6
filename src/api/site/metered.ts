/**
 * The shape every companion-site metered write shares: an act of the pipeline
 * (api/act.ts) that mints its receipt under the write lock (batch-sealed
 * unless the act hands out a self-contained JWS), stating its charges, and
 * commits the area's state, the receipt and the idempotent answer in one
 * transaction, with the acts queued beside it.
 */
import type { ActEvent } from '../act-event.ts';
import type { Transaction } from '../../ledger/sql.ts';
import type { BilledLine } from '../charges.ts';
import type { ApiKey } from '../../ledger/api-keys.ts';
import type { ActRecord } from '../../ledger/records.ts';
import type { Receipt, ReceiptInput, ReceiptOpening } from '../../ledger/receipts.ts';
import { commitAct } from '../act.ts';
import { commit } from '../../crypto/commitment.ts';
import { fingerprint } from '../../crypto/canonical.ts';
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
  event: ActEvent,
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
      const receipt = state.receipt(
        ctx,
        { ...c.input, key_id: key.id },
        { signed: opts.signed ?? false, charges: chargesOf(key, charges), openings: c.openings },
      );
      return { reply: await write(tx, receipt), writes: { receipt } };
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
  event: ActEvent,
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
      const receipt = state.receipt(ctx, { ...c.input, key_id: key.id }, { charges: chargesOf(key, charges), openings: c.openings });
      const { record, reply } = make(receipt);
      return { reply, writes: { receipt, records: record ? [record] : [] } };
    },
  });
}

/** A receipt input with caller text replaced by commitments, and the openings of those commitments. */
export interface Committed<I extends Omit<ReceiptInput, 'key_id'> = Omit<ReceiptInput, 'key_id'>> {
  input: I;
  /** Each with its commitment; a receipt keeps them for its key's account (`state.receipt`'s `openings`). */
  openings: Array<ReceiptOpening & { commitment: string }>;
}

/**
 * The receipt input with the caller free text at `paths` replaced by salted
 * commitments (docs/public-log.md), and their openings. A path is dotted from
 * the input ("subject", "data.reason"); `*` walks every item of an array
 * ("data.evidence.*.name"). A path with nothing there is skipped.
 */
export function committed<I extends Omit<ReceiptInput, 'key_id'>>(input: I, paths: readonly string[]): Committed<I> {
  if (paths.length === 0) return { input, openings: [] };
  const openings: Committed['openings'] = [];
  // Copies only the objects and arrays on the way to a committed value (a whole clone of the input
  // showed at about 12 µs of every evaluate); the rest is shared with the input, and never changed.
  const replaced = (node: unknown, parts: readonly string[], at: string[]): unknown => {
    if (node === null || typeof node !== 'object') return node;
    const [head, ...rest] = parts as [string, ...string[]];
    const keys = head === '*' ? (Array.isArray(node) ? node.map((_, i) => String(i)) : []) : [head];
    let copy: Record<string, unknown> | undefined;
    for (const k of keys) {
      const child = (node as Record<string, unknown>)[k];
      if (child === undefined) continue;
      let next: unknown;
      if (rest.length) next = replaced(child, rest, [...at, k]);
      else {
        const { commitment, salt } = commit(child);
        next = commitment;
        openings.push({ field: [...at, k].join('.'), value: child, salt, commitment });
      }
      if (next === child) continue;
      copy ??= (Array.isArray(node) ? [...node] : { ...node }) as Record<string, unknown>;
      copy[k] = next;
    }
    return copy ?? node;
  };
  let copy = input as unknown as Record<string, unknown>;
  for (const p of paths) copy = replaced(copy, p.split('.'), []) as Record<string, unknown>;
  // A plain hash of the request would let anyone test guesses of the text: the fingerprint is
  // taken over the receipt's subject and data as committed instead.
  if (openings.length && copy.fingerprint !== undefined) copy = { ...copy, fingerprint: committedFingerprint(copy) };
  return { input: copy as I, openings };
}

/** The fingerprint of a receipt that commits caller text: the SHA-256 of the canonical JSON of its subject and data, as committed. */
export const committedFingerprint = (input: Pick<ReceiptInput, 'subject' | 'data'>): string =>
  fingerprint({ subject: input.subject, data: input.data });

const chargesOf = (key: ApiKey, charges: readonly MeterLine[]) => charges.map((c) => ({ keyId: key.id, ...c }));

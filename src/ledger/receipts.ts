/**
 * Receipts: every governed act, refusals included, gets one, and every one is
 * an entry of the `receipts` log.
 *
 * A receipt is minted under the write lock, by the act it records
 * (ledger/acts.ts `state.receipt(input)`), because its id carries its log
 * index: `rcpt_<index>_<22 random base64url characters>`. So an id resolves
 * to its entry with no per-receipt row (the entry is read from its tile), and
 * the random part keeps ids unguessable. Receipts issued before tiles
 * (migration 0200) keep their ids through `receipt_ids_legacy`.
 *
 * Two kinds, both appended to the log:
 *  - batch-sealed (default): no signature of its own; its log entry is the
 *    canonical JSON of its payload, and the batch that commits it also commits
 *    one seal of the log (ledger/seals.ts). The hot path signs nothing.
 *  - self-contained (`signed`), for acts that hand the caller a token to
 *    present elsewhere (the execute-gate receipt of RR-1, an absence witness):
 *    a compact JWS (EdDSA, kid = RFC 7638 thumbprint, typ
 *    "fusegate-receipt+jws") over the canonical JSON of its payload, which is
 *    then its log entry.
 *
 * A receipt states the act's charges: the meter's counters are their sums
 * (ledger/meter.ts) and a clearing period recounts them from the log.
 */
import type { Client } from './sql.ts';
import { compactJwsSync } from '../crypto/jws.ts';
import type { Keyring } from '../crypto/keys.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { RECEIPT_TYP, TEST_RECEIPTS_LOG } from '../crypto/receipt.ts';
import { newId, nowIso, numericDate } from '../ids.ts';
import { readEntry } from './log.ts';
import { RECEIPTS_LOG } from './seals.ts';

/**
 * TEST_RECEIPTS_LOG is the log of test keys' receipts (docs/test-mode.md): its
 * own origin, checkpoints and tiles beside the receipts log, which never holds
 * a test receipt. Its receipts' ids are `rcpt_test_<index>_<random>`.
 */
export { RECEIPT_TYP, RECEIPTS_LOG, TEST_RECEIPTS_LOG };

/** The log a receipt of a live act, or of a test act, is an entry of. */
export const receiptsLogOf = (test: boolean): string => (test ? TEST_RECEIPTS_LOG : RECEIPTS_LOG);

/** What making a receipt needs from the service (the app context has it; the ledger imports nothing from api/). */
export interface ReceiptIssuer {
  config: { BASE_URL: string };
  keyring: Keyring;
}

/** One charge of an act, as its receipt states it; the key charged is the receipt's `key_id`. */
export interface ReceiptCharge {
  sku: string;
  /** Integer micro-USD, at most MAX_CHARGE_MICROS (below 2^53: exact as a JSON number). */
  amount_micros: number;
  /** A negative-act premium SKU (a refusal). */
  nap?: boolean;
}

export interface ReceiptInput {
  /** What kind of act: hop, lookup, act, classify, execute_gate, prefinality, redeem... */
  kind: string;
  /** The decision word: PERMIT, DENY, ALLOW, BLOCK, HOLD, SILENCE, GO, NO_GO, HALT, or a state. */
  decision: string;
  /** What it was about: a fuse_id, license_id, job_id... */
  subject?: string;
  /** The calling key (absent for public demos). */
  key_id?: string;
  /** SHA-256 hex of the canonical act (see crypto/canonical.ts). */
  fingerprint?: string;
  demo?: boolean;
  /** A test key's act (docs/test-mode.md): an entry of the test log, its charges never billed. Absent for a live act. */
  test?: true;
  /** Further facts of the decision. */
  data?: Record<string, unknown>;
  /** What the act charged `key_id` (absent when nothing). */
  charges?: ReceiptCharge[];
}

/**
 * The payload. `iat` is a NumericDate (RFC 7519 4.1.6: whole seconds since the
 * epoch), as in the pre-finality JWT. `issued_at` is the same instant as
 * RFC 3339 UTC with milliseconds, for people and for ordering.
 */
export interface ReceiptPayload extends ReceiptInput {
  receipt_id: string;
  iss: string;
  iat: number;
  issued_at: string;
}

export interface Receipt {
  receipt_id: string;
  /** The receipt's own JWS, or null for a batch-sealed receipt. */
  jws: string | null;
  payload: ReceiptPayload;
  log_index: number;
  /** The log it is an entry of: RECEIPTS_LOG, or TEST_RECEIPTS_LOG for a test receipt. */
  log: string;
  verify_url: string;
  /** What opens the commitments in its payload: kept for its key's account, never in the log (key-receipts.ts). */
  openings?: readonly ReceiptOpening[] | undefined;
}

/** The opening of one commitment of a receipt's payload (crypto/commitment.ts): its field, the committed value and its salt. */
export interface ReceiptOpening {
  /** The field's path in the payload: "subject", "data.reason", "data.evidence.0.name". */
  field: string;
  value: unknown;
  /** base64url. */
  salt: string;
}

export function verifyUrl(ctx: ReceiptIssuer, receiptId: string): string {
  return `${ctx.config.BASE_URL}/v1/receipts/${receiptId}`;
}

/** The log index a receipt id of the receipts log carries, or undefined for a test receipt's id, one minted before tiles, or no id at all. */
export function receiptIndex(id: string): number | undefined {
  const m = /^rcpt_(\d{1,15})_[A-Za-z0-9_-]{22}$/.exec(id);
  return m ? Number(m[1]) : undefined;
}

/** The log and index a receipt id carries (a test receipt's: the test log), or undefined for an id minted before tiles. */
export function receiptLocation(id: string): { log: string; index: number } | undefined {
  const m = /^rcpt_(test_)?(\d{1,15})_[A-Za-z0-9_-]{22}$/.exec(id);
  return m ? { log: receiptsLogOf(m[1] !== undefined), index: Number(m[2]) } : undefined;
}

/** Makes the receipt that will be entry `index` of its log, the test log for a test act (ledger/acts.ts calls it under the lock). */
export function mintReceipt(ctx: ReceiptIssuer, index: number, input: ReceiptInput, signed = false, now = new Date()): Receipt {
  const test = input.test === true;
  const receipt_id = newId(test ? `rcpt_test_${index}` : `rcpt_${index}`);
  const payload: ReceiptPayload = { ...input, receipt_id, iss: ctx.config.BASE_URL, iat: numericDate(now), issued_at: nowIso(now) };
  const jws = signed ? compactJwsSync(canonicalJson(payload), ctx.keyring.current, RECEIPT_TYP) : null;
  return { receipt_id, jws, payload, log_index: index, log: receiptsLogOf(test), verify_url: verifyUrl(ctx, receipt_id) };
}

/** The exact text of a receipt's log entry: its JWS, or the canonical JSON of its payload. */
export function receiptLeaf(r: Pick<Receipt, 'jws' | 'payload'>): string {
  return r.jws ?? canonicalJson(r.payload);
}

/** A receipt read back from its entry: a JWS (three dot-separated parts) or the canonical JSON of a sealed payload. */
export function receiptFromLeaf(leaf: string): { jws: string | null; payload: ReceiptPayload } {
  if (leaf.startsWith('{')) return { jws: null, payload: JSON.parse(leaf) as ReceiptPayload };
  const body = leaf.split('.')[1] ?? '';
  return { jws: leaf, payload: JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as ReceiptPayload };
}

export interface StoredReceipt {
  receipt_id: string;
  /** null for a batch-sealed receipt. */
  jws: string | null;
  payload: ReceiptPayload;
  log_index: number;
  /** The log it is an entry of (RECEIPTS_LOG or TEST_RECEIPTS_LOG). */
  log: string;
}

/** Where receipt `id` is: from the id itself, or for an id minted before tiles, from its legacy row (always the receipts log). */
async function locationOf(db: Client, id: string): Promise<{ log: string; index: number } | undefined> {
  const at = receiptLocation(id);
  if (at !== undefined) return at;
  const rs = await db.execute({ sql: 'SELECT log_index FROM receipt_ids_legacy WHERE id = ?', args: [id] });
  return rs.rows[0] ? { log: RECEIPTS_LOG, index: Number(rs.rows[0].log_index) } : undefined;
}

export async function getReceipt(db: Client, id: string): Promise<StoredReceipt | undefined> {
  const at = await locationOf(db, id);
  if (at === undefined) return undefined;
  const entry = await readEntry(db, at.log, at.index);
  if (!entry) return undefined;
  const r = receiptFromLeaf(Buffer.from(entry.leaf).toString('utf8'));
  // The index is public; the random part is what makes an id a capability: it must match.
  if (r.payload.receipt_id !== id) return undefined;
  return { receipt_id: id, ...r, log_index: at.index, log: at.log };
}

/** Receipts read back from their entries of `log`, in the order of `indexes`. */
export function receiptsFromEntries(entries: ReadonlyArray<{ index: number; leaf: Uint8Array }>, log = RECEIPTS_LOG): StoredReceipt[] {
  return entries.map((e) => {
    const r = receiptFromLeaf(Buffer.from(e.leaf).toString('utf8'));
    return { receipt_id: r.payload.receipt_id, ...r, log_index: e.index, log };
  });
}

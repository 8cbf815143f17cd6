/**
 * Receipts: every governed act, refusals included, gets one.
 *
 * Made outside the write lock, written inside it as an act's writes (ledger/acts.ts):
 *   const receipt = sealedReceipt(ctx, {...}) or await signReceipt(ctx, {...});
 *   await ledger.act({ needs, decide: () => ({ writes: { receipt, charges }, result }) });
 *
 * Two kinds of receipt, both appended to the `receipts` log:
 *  - batch-sealed (`sealedReceipt`): no signature of its own; its log leaf is
 *    the canonical JSON of its payload, and the batch that commits it also
 *    commits one seal of the log (ledger/seals.ts). The hot path signs nothing.
 *  - self-contained (`signReceipt`), for acts that hand the caller a token to
 *    present elsewhere (the execute-gate receipt of RR-1, an absence witness):
 *    a compact JWS (EdDSA, kid = RFC 7638 thumbprint, typ
 *    "fusegate-receipt+jws") over the canonical JSON of its payload, which is
 *    then also its log leaf (as every receipt's was before batch seals).
 */
import type { Client, Transaction } from './sql.ts';
import { compactJwsSync } from '../crypto/jws.ts';
import type { Keyring } from '../crypto/keys.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { RECEIPT_TYP } from '../crypto/receipt.ts';
import { newSortableId, nowIso, numericDate } from '../ids.ts';
import { appendLeaves, insertRows } from './log.ts';
import { RECEIPTS_LOG } from './seals.ts';

export { RECEIPT_TYP, RECEIPTS_LOG };

/** What making a receipt needs from the service (the app context has it; the ledger imports nothing from api/). */
export interface ReceiptIssuer {
  config: { BASE_URL: string };
  keyring: Keyring;
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
  /** Further facts of the decision. */
  data?: Record<string, unknown>;
}

/**
 * The signed payload. `iat` is a NumericDate (RFC 7519 4.1.6: whole seconds
 * since the epoch), as in the pre-finality JWT: one `iat` format in both
 * receipt kinds. `issued_at` is the same instant as RFC 3339 UTC with
 * milliseconds, for people and for ordering.
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
  verify_url: string;
}

export interface SignedReceipt extends Receipt {
  jws: string;
}

export function verifyUrl(ctx: ReceiptIssuer, receiptId: string): string {
  return `${ctx.config.BASE_URL}/v1/receipts/${receiptId}`;
}

function payloadOf(ctx: ReceiptIssuer, input: ReceiptInput): ReceiptPayload {
  const now = new Date();
  return { ...input, receipt_id: newSortableId('rcpt', now.getTime()), iss: ctx.config.BASE_URL, iat: numericDate(now), issued_at: nowIso(now) };
}

/** A batch-sealed receipt: nothing is signed per receipt (see the module comment). */
export function sealedReceipt(ctx: ReceiptIssuer, input: ReceiptInput): Receipt {
  const payload = payloadOf(ctx, input);
  return { receipt_id: payload.receipt_id, jws: null, payload, verify_url: verifyUrl(ctx, payload.receipt_id) };
}

export async function signReceipt(ctx: ReceiptIssuer, input: ReceiptInput): Promise<SignedReceipt> {
  const payload = payloadOf(ctx, input);
  const receipt_id = payload.receipt_id;
  const key = ctx.keyring.current;
  const jws = compactJwsSync(canonicalJson(payload), key, RECEIPT_TYP);
  return { receipt_id, jws, payload, verify_url: verifyUrl(ctx, receipt_id) };
}

/** The exact text of a receipt's log leaf: its JWS, or the canonical JSON of its payload. */
export function receiptLeaf(r: Receipt): string {
  return r.jws ?? canonicalJson(r.payload);
}

/**
 * Stores receipts inside the caller's write transaction and appends them, in
 * order, to the `receipts` log (leaf: the UTF-8 bytes of `receiptLeaf`), with a
 * constant number of statements whatever their count. The leaf is the stored
 * receipt; its row holds what is searched and where the leaf is (migration 0181).
 */
export async function recordReceipts(tx: Transaction, receipts: readonly Receipt[]): Promise<void> {
  if (receipts.length === 0) return;
  const { first } = await appendLeaves(tx, RECEIPTS_LOG, receipts.map((r) => Buffer.from(receiptLeaf(r), 'utf8')));
  await insertRows(
    tx,
    'INSERT INTO receipts (id, log_index, kind, decision, subject, key_id, created_at) VALUES',
    '(?, ?, ?, ?, ?, ?, ?)',
    receipts.map((r, i) => [r.receipt_id, first + i, r.payload.kind, r.payload.decision, r.payload.subject ?? null, r.payload.key_id ?? null, r.payload.issued_at]),
  );
}

export interface StoredReceipt {
  receipt_id: string;
  /** null for a batch-sealed receipt. */
  jws: string | null;
  payload: ReceiptPayload;
  log_index: number;
}

/** A receipt read back from its leaf: a JWS (three dot-separated parts) or the canonical JSON of a sealed payload. */
export function receiptFromLeaf(leaf: string): { jws: string | null; payload: ReceiptPayload } {
  if (leaf.startsWith('{')) return { jws: null, payload: JSON.parse(leaf) as ReceiptPayload };
  const body = leaf.split('.')[1] ?? '';
  return { jws: leaf, payload: JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as ReceiptPayload };
}

export async function getReceipt(db: Client, id: string): Promise<StoredReceipt | undefined> {
  const rs = await db.execute({
    sql: "SELECT r.log_index, e.leaf FROM receipts r JOIN log_entries e ON e.log = 'receipts' AND e.idx = r.log_index WHERE r.id = ?",
    args: [id],
  });
  const row = rs.rows[0];
  if (!row) return undefined;
  return { receipt_id: id, ...receiptFromLeaf(Buffer.from(row.leaf as ArrayBuffer).toString('utf8')), log_index: Number(row.log_index) };
}

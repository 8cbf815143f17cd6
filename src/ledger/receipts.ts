/**
 * Receipts: every governed act, refusals included, gets one.
 *
 * Two steps, so that signing (the slow part) never runs inside the write lock:
 *   const receipt = await signReceipt(ctx, {...});           // before the transaction
 *   await ledger.write(async (tx) => { ...effects; await recordReceipt(tx, receipt); });
 *
 * A receipt is a compact JWS (EdDSA, kid = RFC 7638 thumbprint, typ
 * "fusegate-receipt+jws") over the canonical JSON of its payload.
 */
import type { Client, Transaction } from '@libsql/client';
import { CompactSign } from 'jose';
import type { AppContext } from '../api/context.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { RECEIPT_TYP } from '../crypto/receipt.ts';
import { newId, nowIso, numericDate } from '../ids.ts';
import { appendLeaf } from './log.ts';

export { RECEIPT_TYP };
export const RECEIPTS_LOG = 'receipts';

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

export interface SignedReceipt {
  receipt_id: string;
  jws: string;
  payload: ReceiptPayload;
  verify_url: string;
}

export function verifyUrl(ctx: AppContext, receiptId: string): string {
  return `${ctx.config.BASE_URL}/v1/receipts/${receiptId}`;
}

export async function signReceipt(ctx: AppContext, input: ReceiptInput): Promise<SignedReceipt> {
  const receipt_id = newId('rcpt');
  const now = new Date();
  const payload: ReceiptPayload = { ...input, receipt_id, iss: ctx.config.BASE_URL, iat: numericDate(now), issued_at: nowIso(now) };
  const key = ctx.keyring.current;
  const jws = await new CompactSign(new TextEncoder().encode(canonicalJson(payload)))
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYP })
    .sign(key.privateKey);
  return { receipt_id, jws, payload, verify_url: verifyUrl(ctx, receipt_id) };
}

/**
 * Stores a signed receipt inside the caller's write transaction and appends it
 * to the `receipts` log: the leaf is the exact UTF-8 bytes of the compact JWS.
 */
export async function recordReceipt(tx: Transaction, r: SignedReceipt): Promise<void> {
  const { index } = await appendLeaf(tx, RECEIPTS_LOG, new TextEncoder().encode(r.jws));
  await tx.execute({
    sql: `INSERT INTO receipts (id, kind, decision, subject, key_id, jws, payload, created_at, log_index)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    args: [
      r.receipt_id,
      r.payload.kind,
      r.payload.decision,
      r.payload.subject ?? null,
      r.payload.key_id ?? null,
      r.jws,
      canonicalJson(r.payload),
      r.payload.issued_at,
      index,
    ],
  });
}

export interface StoredReceipt {
  receipt_id: string;
  jws: string;
  payload: ReceiptPayload;
  log_index: number;
}

export async function getReceipt(db: Client, id: string): Promise<StoredReceipt | undefined> {
  const rs = await db.execute({ sql: 'SELECT id, jws, payload, log_index FROM receipts WHERE id = ?', args: [id] });
  const row = rs.rows[0];
  if (!row) return undefined;
  return {
    receipt_id: String(row.id),
    jws: String(row.jws),
    payload: JSON.parse(String(row.payload)) as ReceiptPayload,
    log_index: Number(row.log_index),
  };
}

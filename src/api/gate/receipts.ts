/**
 * The public receipt verifier (SPEC 1, foundry layer 0 "stranger /verify").
 *  - GET /v1/receipts/{id}: JSON (Accept: application/json) with the receipt,
 *    its payload, log index, inclusion proof and the signed checkpoint it is
 *    proven against; or, for a browser, a page that says plainly whether the
 *    signature and the inclusion hold.
 *  - POST /v1/receipts/verify {receipt}: whether a receipt JWS verifies, and why not.
 */
import { z } from 'zod';
import { verifyInclusion, leafHash } from '../../crypto/merkle.ts';
import { verifyReceiptJws } from '../../crypto/receipt.ts';
import { logVerifierKeys, signedCheckpoint } from '../../ledger/checkpoint.ts';
import { inclusionProof } from '../../ledger/log.ts';
import { RECEIPTS_LOG, getReceipt, type StoredReceipt } from '../../ledger/receipts.ts';
import { readBody } from '../body.ts';
import { escapeHtml, htmlPage, htmlResponse, wantsHtml } from '../html.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply, toResponse } from '../reply.ts';
import type { Router } from '../router.ts';

const b64 = (h: Uint8Array) => Buffer.from(h).toString('base64');
const verifyBody = z.object({ receipt: z.string().min(1).max(16384) });

export interface ReceiptEvidence {
  receipt_id: string;
  receipt: string;
  payload: Record<string, unknown>;
  log: { name: string; index: number; verifier_key: string };
  inclusion: { tree_size: number; leaf_hash: string; hashes: string[] };
  checkpoint: string;
  verification: { signature: boolean; inclusion: boolean; detail?: string };
}

/** Everything a stranger needs to check a receipt without trusting us. */
export async function receiptEvidence(ctx: AppContext, r: StoredReceipt): Promise<ReceiptEvidence> {
  const cp = await signedCheckpoint(ctx, RECEIPTS_LOG);
  const proof = await inclusionProof(ctx.ledger.read, RECEIPTS_LOG, r.log_index, cp.size);
  const sig = await verifyReceiptJws(ctx.keyring, r.jws);
  let inclusion = true;
  try {
    const lh = leafHash(new TextEncoder().encode(r.jws));
    verifyInclusion(r.log_index, cp.size, lh, proof.hashes, cp.root);
  } catch {
    inclusion = false;
  }
  return {
    receipt_id: r.receipt_id,
    receipt: r.jws,
    payload: r.payload as unknown as Record<string, unknown>,
    log: { name: RECEIPTS_LOG, index: r.log_index, verifier_key: logVerifierKeys(ctx, RECEIPTS_LOG)[0]! },
    inclusion: { tree_size: cp.size, leaf_hash: b64(proof.leafHash), hashes: proof.hashes.map(b64) },
    checkpoint: cp.note,
    verification: { signature: sig.valid, inclusion, ...(sig.valid ? {} : { detail: sig.detail }) },
  };
}

function receiptPage(e: ReceiptEvidence): string {
  const ok = e.verification.signature && e.verification.inclusion;
  const row = (k: string, v: string) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`;
  const yes = (b: boolean, good: string, bad: string) => `<strong class="${b ? 'ok' : 'bad'}">${b ? good : bad}</strong>`;
  return htmlPage(
    `Receipt ${e.receipt_id}`,
    `<h1>Receipt <code>${escapeHtml(e.receipt_id)}</code></h1>
<p class="verdict">${ok ? 'This receipt is genuine: its signature verifies and it is included in the public receipts log.' : 'This receipt does NOT fully verify.'}</p>
<table>${row('Signature', yes(e.verification.signature, 'verifies (Ed25519)', 'does not verify'))}
${row('Inclusion', yes(e.verification.inclusion, `included at index ${e.log.index} of ${e.inclusion.tree_size}`, 'not proven'))}
${row('Decision', `<code>${escapeHtml(String(e.payload.decision ?? ''))}</code>`)}${row('Kind', `<code>${escapeHtml(String(e.payload.kind ?? ''))}</code>`)}
${row('Subject', `<code>${escapeHtml(String(e.payload.subject ?? '—'))}</code>`)}${row('Issued', `<code>${escapeHtml(String(e.payload.issued_at ?? e.payload.iat ?? ''))}</code>`)}</table>
<h2>Check it yourself</h2><p>Verify the checkpoint with the note verifier key, then the inclusion proof of SHA-256(0x00 || receipt) against its root (RFC 9162).</p>
<table>${row('Verifier key', `<code>${escapeHtml(e.log.verifier_key)}</code>`)}${row('Checkpoint', `<pre>${escapeHtml(e.checkpoint)}</pre>`)}
${row('Leaf hash', `<code>${escapeHtml(e.inclusion.leaf_hash)}</code>`)}${row('Proof', `<pre>${escapeHtml(e.inclusion.hashes.join('\n'))}</pre>`)}
${row('Receipt (JWS)', `<code>${escapeHtml(e.receipt)}</code>`)}</table>`,
    `.verdict{padding:1rem;border-radius:.5rem;background:${ok ? '#ecfdf5' : '#fef2f2'};border:1px solid ${ok ? '#059669' : '#dc2626'}}`,
  );
}

export function registerReceiptRoutes(router: Router, ctx: AppContext): void {
  router.get('/v1/receipts/:receipt_id', async (event) => {
    const id = event.context.params?.receipt_id ?? '';
    const r = /^[A-Za-z0-9_-]{1,64}$/.test(id) ? await getReceipt(ctx.ledger.read, id) : undefined;
    if (!r) throw notFound(`no receipt ${id}`, 'unknown_receipt');
    const evidence = await receiptEvidence(ctx, r);
    if (wantsHtml(event)) {
      return htmlResponse(receiptPage(evidence));
    }
    return toResponse(reply(evidence), { vary: 'accept', 'access-control-allow-origin': '*' });
  }, { summary: "A receipt's evidence: JWS, payload, log index, inclusion proof, signed checkpoint (HTML for browsers)", auth: 'public', tag: 'receipts', problems: [404] });

  router.post('/v1/receipts/verify', async (event) => {
    const { receipt } = await readBody(event, verifyBody, ctx.config.MAX_BODY_BYTES);
    const check = await verifyReceiptJws(ctx.keyring, receipt.trim());
    if (!check.valid) return toResponse(reply({ valid: false, reason: check.reason, detail: check.detail }));
    const id = String(check.payload.receipt_id ?? '');
    const stored = id ? await getReceipt(ctx.ledger.read, id) : undefined;
    const inLog = stored !== undefined && stored.jws === receipt.trim();
    return toResponse(
      reply({
        valid: true,
        kid: check.kid,
        payload: check.payload,
        in_log: inLog,
        ...(inLog ? { log_index: stored.log_index, verify_url: `${ctx.config.BASE_URL}/v1/receipts/${id}` } : {}),
      }),
    );
  }, { summary: 'Verify a receipt JWS: signature, key, and whether it is in the receipts log', auth: 'public', tag: 'receipts', body: verifyBody });
}

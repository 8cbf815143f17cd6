/**
 * The public receipt verifier (SPEC 1, foundry layer 0 "stranger /verify").
 *  - GET /v1/receipts/{id}: JSON (Accept: application/json) with the receipt,
 *    its payload, log index, inclusion proof and the signed checkpoint it is
 *    proven against; or, for a browser, a page that says plainly whether the
 *    signature and the inclusion hold.
 *  - POST /v1/receipts/verify {receipt}: whether a receipt JWS verifies, and why not.
 */
import { HTTPResponse } from 'h3';
import { z } from 'zod';
import { COSE_CONTENT_TYPE, coseReceipt, transparentStatement } from '../../crypto/cose.ts';
import type { PublicSigningKey } from '../../crypto/keys.ts';
import { checkpointText, noteParts, parseCheckpointText, verifierKey } from '../../crypto/note.ts';
import { CHECKPOINT_TYP, verifyReceiptEvidence, verifyReceiptJws, type Check, type ReceiptEvidenceDoc } from '../../crypto/receipt.ts';
import { compactJwsSync } from '../../crypto/jws.ts';
import { logOrigin, signedCheckpoint } from '../../ledger/checkpoint.ts';
import { inclusionProof, readEntries } from '../../ledger/log.ts';
import { RECEIPTS_LOG, TEST_RECEIPTS_LOG, getReceipt, type StoredReceipt } from '../../ledger/receipts.ts';
import { sealCovering } from '../../ledger/seals.ts';
import { witnessedSizeCovering } from '../../ledger/witnesses.ts';
import { formatWitnessPolicy, witnessesOf } from '../../crypto/witness-policy.ts';
import { escapeHtml, htmlPage, htmlResponse, wantsHtml } from '../html.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { operation } from '../operation.ts';

const b64Hash = z.string().max(64);
/** A receipt's published evidence (the JSON of GET /v1/receipts/{id}). */
const evidenceSchema = z.looseObject({
  leaf: z.string().min(1).max(16384),
  receipt: z.string().min(1).max(16384).nullable(),
  payload: z.record(z.string(), z.unknown()),
  log: z.looseObject({
    name: z.string().max(64),
    index: z.number().int().nonnegative(),
    origin: z.string().max(300).optional(),
    verifier_key: z.string().max(400),
  }),
  inclusion: z.looseObject({ tree_size: z.number().int().positive(), leaf_hash: b64Hash, hashes: z.array(b64Hash).max(64) }),
  checkpoint: z.string().min(1).max(4096),
  checkpoint_jws: z.string().max(4096).nullable().optional(),
});
const verifyBody = z.object({
  receipt: z
    .union([z.string().min(1).max(16384), evidenceSchema])
    .describe("a receipt's compact JWS, or its whole evidence (the JSON at its verify_url)"),
});

export interface ReceiptEvidence extends ReceiptEvidenceDoc {
  receipt_id: string;
  log: { name: string; index: number; origin: string; verifier_key: string };
  checkpoint_jws: string;
  verification: { signature: boolean; inclusion: boolean; witnesses?: boolean; detail?: string };
}

/**
 * Everything a stranger needs to check a receipt without trusting us: its leaf,
 * its index, the inclusion proof at its seal's tree size, and the seal (signed
 * note + JWS over its body). A receipt no seal covers yet (written by the CLI)
 * is proven against the current checkpoint, signed now: a tree head at a size
 * is deterministic, so this evidence can always be re-created.
 */
export async function receiptEvidence(ctx: AppContext, r: StoredReceipt): Promise<ReceiptEvidence> {
  // A test receipt is proven against the test log, under its own origin (docs/test-mode.md).
  const log = r.log;
  const origin = logOrigin(ctx.config.SITE_URL, log);
  // The first checkpoint past the receipt that its witnesses cosigned (with the quorum if one has it), else its seal (the receipts log's only).
  const witnessed = await witnessedSizeCovering(ctx, log, r.log_index);
  const seal = witnessed || log !== RECEIPTS_LOG ? undefined : await sealCovering(ctx.ledger.read, r.log_index);
  let checkpoint: string;
  let checkpoint_jws: string;
  let size: number;
  let signer = ctx.keyring.current as PublicSigningKey;
  if (witnessed) {
    checkpoint = witnessed.note;
    size = witnessed.size;
    checkpoint_jws = compactJwsSync(checkpointText(witnessed), ctx.keyring.current, CHECKPOINT_TYP);
  } else if (seal) {
    ({ note: checkpoint, jws: checkpoint_jws, tree_size: size } = seal);
    signer = ctx.keyring.byKid(seal.kid) ?? signer;
  } else {
    const cp = await signedCheckpoint(ctx, log);
    checkpoint = cp.note;
    size = cp.size;
    checkpoint_jws = compactJwsSync(checkpointText(cp), ctx.keyring.current, CHECKPOINT_TYP);
  }
  const [entry] = await readEntries(ctx.ledger.read, log, r.log_index, 1);
  const proof = await inclusionProof(ctx.ledger.read, log, r.log_index, size);
  const doc = {
    leaf: new TextDecoder().decode(entry!.leaf),
    receipt: r.jws,
    payload: r.payload as unknown as Record<string, unknown>,
    log: { name: log, index: r.log_index, origin, verifier_key: verifierKey(origin, signer.raw) },
    inclusion: { tree_size: size, leaf_hash: b64(proof.leafHash), hashes: proof.hashes.map(b64) },
    checkpoint,
    checkpoint_jws,
    ...(ctx.witnessPolicy
      ? { witnesses: { policy: formatWitnessPolicy(ctx.witnessPolicy), ...(await witnessesOf(checkpoint, ctx.witnessPolicy)) } }
      : {}),
  };
  const checks = await verifyReceiptEvidence(doc, {
    keys: ctx.keyring,
    logKey: doc.log.verifier_key,
    ...(ctx.witnessPolicy ? { witnesses: ctx.witnessPolicy } : {}),
  });
  const failed = Object.values(checks).find((c) => !c.ok);
  const signature = Object.entries(checks).every(([name, c]) => name === 'inclusion' || name === 'witnesses' || c.ok);
  return {
    receipt_id: r.receipt_id,
    ...doc,
    verification: {
      signature,
      inclusion: checks.inclusion!.ok,
      ...(checks.witnesses ? { witnesses: checks.witnesses.ok } : {}),
      ...(failed ? { detail: failed.detail } : {}),
    },
  };
}

/**
 * The same receipt as SCITT COSE (crypto/cose.ts): a transparent statement
 * (COSE_Sign1 over the log entry) carrying a COSE receipt whose RFC9162_SHA256
 * inclusion proof leads to the root of the checkpoint the JSON evidence names.
 */
function receiptCose(ctx: AppContext, e: ReceiptEvidence): Uint8Array {
  const key = ctx.keyring.current;
  const root = parseCheckpointText(noteParts(e.checkpoint).text).root;
  const receipt = coseReceipt(
    {
      treeSize: e.inclusion.tree_size,
      leafIndex: e.log.index,
      hashes: e.inclusion.hashes.map((h) => new Uint8Array(Buffer.from(h, 'base64'))),
      root,
      kid: key.kid,
    },
    key,
  );
  const statement = {
    entry: new TextEncoder().encode(e.leaf),
    contentType: e.receipt ? 'application/jose' : 'application/json',
    issuer: String(e.payload.iss ?? ctx.config.BASE_URL),
    subject: e.receipt_id,
    kid: key.kid,
  };
  return transparentStatement(statement, [receipt], key);
}

/** True when the client asks for COSE (Accept: application/cose) before JSON or HTML. */
function wantsCose(accept: string | null): boolean {
  return accept !== null && /(^|,)\s*application\/cose(\s*[;,]|\s*$)/i.test(accept);
}

function receiptPage(e: ReceiptEvidence): string {
  const ok = e.verification.signature && e.verification.inclusion;
  const row = (k: string, v: string) => `<tr><th scope="row">${escapeHtml(k)}</th><td>${v}</td></tr>`;
  const yes = (b: boolean, good: string, bad: string) => `<strong class="${b ? 'ok' : 'bad'}">${b ? good : bad}</strong>`;
  return htmlPage(
    `Receipt ${e.receipt_id}`,
    `<h1>Receipt <code>${escapeHtml(e.receipt_id)}</code></h1>
${e.payload.test === true ? '<p class="test-mode"><strong>Test receipt</strong>: a test key\'s act, logged in the test log and billed nothing. It is not a live receipt.</p>' : ''}<p class="verdict">${ok ? `This receipt is genuine: its signature verifies and it is included in the public ${e.payload.test === true ? 'test log' : 'receipts log'}.` : 'This receipt does NOT fully verify.'}</p>
<table>${row('Signature', yes(e.verification.signature, e.receipt ? 'verifies (Ed25519)' : 'sealed: its signed checkpoint verifies (Ed25519)', 'does not verify'))}
${row('Inclusion', yes(e.verification.inclusion, `included at index ${e.log.index} of ${e.inclusion.tree_size}`, 'not proven'))}
${e.witnesses ? row('Witnesses', `${yes(e.verification.witnesses !== false, e.witnesses.cosigned_by.length ? `cosigned by ${escapeHtml(e.witnesses.cosigned_by.join(', '))}` : 'no witness has cosigned this checkpoint yet', 'a cosignature does not verify')}; ${e.witnesses.quorum === null ? 'no quorum required' : `quorum <code>${escapeHtml(e.witnesses.quorum)}</code> ${e.witnesses.quorum_holds ? 'holds' : 'does not hold yet'}`}`) : ''}
${row('Decision', `<code>${escapeHtml(String(e.payload.decision ?? ''))}</code>`)}${row('Kind', `<code>${escapeHtml(String(e.payload.kind ?? ''))}</code>`)}
${row('Subject', `<code>${escapeHtml(String(e.payload.subject ?? '—'))}</code>`)}${row('Issued', `<code>${escapeHtml(String(e.payload.issued_at ?? e.payload.iat ?? ''))}</code>`)}</table>
<p><a href="/verify?id=${encodeURIComponent(e.receipt_id)}">Check it in your browser</a>: the verify page recomputes every check below with the published keys, without trusting this page.</p>
<h2>Check it yourself</h2><p>Verify the checkpoint with the note verifier key, then the inclusion proof of SHA-256(0x00 || leaf) against its root (RFC 9162); the leaf is the receipt JWS, or for a sealed receipt the canonical JSON of its payload.</p>
<table>${row('Verifier key', `<code>${escapeHtml(e.log.verifier_key)}</code>`)}${row('Checkpoint', `<pre>${escapeHtml(e.checkpoint)}</pre>`)}
${row('Leaf hash', `<code>${escapeHtml(e.inclusion.leaf_hash)}</code>`)}${row('Proof', `<pre>${escapeHtml(e.inclusion.hashes.join('\n'))}</pre>`)}
${row(e.receipt ? 'Receipt (JWS)' : 'Leaf', `<code>${escapeHtml(e.leaf)}</code>`)}</table>`,
    `.verdict{padding:1rem;border-radius:.5rem;background:${ok ? '#ecfdf5' : '#fef2f2'};border:1px solid ${ok ? '#059669' : '#dc2626'}}.test-mode{padding:.5rem 1rem;border-radius:.5rem;background:#fff7ed;border:1px solid #c2410c;color:#7c2d12}`,
  );
}

/**
 * The evidence of the HOLD and of the approval behind a GO or PERMIT that a
 * review cleared (`data.review`, docs/reviews.md), so that the chain HOLD ->
 * approval -> this act verifies offline from one document; undefined for any
 * other receipt.
 */
async function reviewChain(ctx: AppContext, r: StoredReceipt): Promise<{ hold: ReceiptEvidence; approval: ReceiptEvidence } | undefined> {
  const link = (r.payload.data as { review?: { hold_receipt_id?: unknown; approval_receipt_id?: unknown } } | undefined)?.review;
  if (typeof link?.hold_receipt_id !== 'string' || typeof link.approval_receipt_id !== 'string') return undefined;
  const [hold, approval] = await Promise.all([
    getReceipt(ctx.ledger.read, link.hold_receipt_id),
    getReceipt(ctx.ledger.read, link.approval_receipt_id),
  ]);
  if (!hold || !approval) return undefined;
  return { hold: await receiptEvidence(ctx, hold), approval: await receiptEvidence(ctx, approval) };
}

export function registerReceiptRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/receipts/:receipt_id',
      tool: 'receipt_get',
      summary:
        "A receipt's evidence, self-contained: leaf, JWS (or null when batch-sealed), payload, log index, inclusion proof, signed checkpoint with its witnesses' cosignatures and its JWS (HTML for browsers; Accept: application/cose for the SCITT COSE transparent statement with its RFC9162_SHA256 receipt)",
      auth: 'public',
      tag: 'receipts',
      problems: [404],
    },
    async ({ params, event }) => {
      const id = params.receipt_id ?? '';
      const r = /^[A-Za-z0-9_-]{1,64}$/.test(id) ? await getReceipt(ctx.ledger.read, id) : undefined;
      if (!r) throw notFound(`no receipt ${id}`, 'unknown_receipt');
      const evidence = await receiptEvidence(ctx, r);
      if (wantsCose(event.req.headers.get('accept'))) {
        const settled = evidence.witnesses?.quorum_holds === true;
        return new HTTPResponse(Buffer.from(receiptCose(ctx, evidence)), {
          headers: {
            'content-type': COSE_CONTENT_TYPE,
            vary: 'accept',
            'access-control-allow-origin': '*',
            'cache-control': settled ? 'public, max-age=3600' : 'no-cache',
          },
        });
      }
      if (wantsHtml(event)) {
        return htmlResponse(receiptPage(evidence));
      }
      // Once its quorum cosigned the checkpoint it is proven against, a receipt's evidence never changes.
      const settled = evidence.witnesses?.quorum_holds === true;
      const chain = await reviewChain(ctx, r);
      return reply(chain ? { ...evidence, review_chain: chain } : evidence, 200, {
        vary: 'accept',
        'access-control-allow-origin': '*',
        'cache-control': settled ? 'public, max-age=3600' : 'no-cache',
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/receipts/verify',
      tool: 'receipt_verify',
      summary:
        'Verify a receipt: a JWS (signature, key, whether it is in the receipts log) or a whole evidence document (seal, inclusion, leaf)',
      auth: 'public',
      tag: 'receipts',
      body: verifyBody,
    },
    async ({ input }) => {
      const { receipt } = input;
      if (typeof receipt !== 'string') return reply(await verifyEvidence(ctx, receipt as ReceiptEvidenceDoc));
      const check = await verifyReceiptJws(ctx.keyring, receipt.trim());
      if (!check.valid) return reply({ valid: false, reason: check.reason, detail: check.detail });
      const id = String(check.payload.receipt_id ?? '');
      const stored = id ? await getReceipt(ctx.ledger.read, id) : undefined;
      const inLog = stored !== undefined && stored.jws !== null && stored.jws === receipt.trim();
      return reply({
        valid: true,
        kid: check.kid,
        payload: check.payload,
        in_log: inLog,
        ...(inLog ? { log_index: stored.log_index, verify_url: `${ctx.config.BASE_URL}/v1/receipts/${id}` } : {}),
      });
    },
  );
}

/**
 * Checks a receipt's evidence against our own keys: the log verifier key of
 * each of them, current first, for the log it names (the receipts log, or the
 * test log for a test receipt: a test receipt never verifies as a live one).
 */
async function verifyEvidence(ctx: AppContext, e: ReceiptEvidenceDoc): Promise<Record<string, unknown>> {
  const log = e.log.name === TEST_RECEIPTS_LOG ? TEST_RECEIPTS_LOG : RECEIPTS_LOG;
  const origin = logOrigin(ctx.config.SITE_URL, log);
  let checks: Record<string, Check> = {};
  for (const key of ctx.keyring.all) {
    checks = await verifyReceiptEvidence(e, {
      keys: ctx.keyring,
      logKey: verifierKey(origin, key.raw),
      ...(ctx.witnessPolicy ? { witnesses: ctx.witnessPolicy } : {}),
    });
    if (checks.checkpoint?.ok) break;
  }
  const failed = Object.entries(checks).find(([, c]) => !c.ok);
  if (failed) return { valid: false, reason: `bad_${failed[0]}`, detail: failed[1].detail, checks };
  const id = String(e.payload.receipt_id ?? '');
  const witnesses = ctx.witnessPolicy ? await witnessesOf(e.checkpoint, ctx.witnessPolicy) : undefined;
  return {
    valid: true,
    payload: e.payload,
    checks,
    ...(witnesses ? { witnesses } : {}),
    in_log: true,
    log: log,
    ...(log === TEST_RECEIPTS_LOG ? { test: true } : {}),
    log_index: e.log.index,
    ...(id ? { verify_url: `${ctx.config.BASE_URL}/v1/receipts/${id}` } : {}),
  };
}

/**
 * Clearing checkpoints (SPEC 2.4 clearing, 2.5 layer 8):
 *   GET /api/v1/clearing/network/latest.json   public   the newest Merkle net attestation, with the proofs to check it
 *   GET /api/v1/clearing/catalog               public   the clearing catalog with network_checkpoint live
 * A timer seals a checkpoint every CLEARING_INTERVAL_HOURS (weekly by default), the first as the server starts;
 * `npm run cli -- clearing seal` seals one now.
 */
import { z } from 'zod';
import { logOrigin } from '../../ledger/checkpoint.ts';
import { cosignedCheckpoint } from '../../ledger/witnesses.ts';
import { CLEARING_LOG, firstReceiptAt, latestClearing, sealClearing, type ClearingAttestation } from '../../ledger/clearing.ts';
import { consistencyProof, readEntries } from '../../ledger/log.ts';
import { RECEIPTS_LOG } from '../../ledger/receipts.ts';
import type { Ledger } from '../../ledger/db.ts';
import type { AppContext } from '../context.ts';
import { intervalJob } from '../jobs.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { base64 as b64 } from '../../crypto/base64.ts';
import { proofAt } from './log-answers.ts';
import { liveCatalog } from './live-catalog.ts';
import { operation } from '../operation.ts';

const PUBLIC = { 'access-control-allow-origin': '*' };

/** Seals the period since the last checkpoint now (used by the timer and the CLI). */
export function sealNow(ledger: Ledger, now = new Date()) {
  return ledger.write((tx) => sealClearing(tx, now));
}

/** The newest checkpoint with everything a stranger needs to check it, or undefined when none was sealed. */
export async function latestEvidence(ctx: AppContext) {
  const db = ctx.ledger.read;
  const latest = await latestClearing(db);
  if (!latest) return undefined;
  const [entry] = await readEntries(db, CLEARING_LOG, latest.log_index, 1);
  const attestation = JSON.parse(new TextDecoder().decode(entry!.leaf)) as ClearingAttestation;
  const clearingCp = await cosignedCheckpoint(ctx, CLEARING_LOG);
  const proof = await proofAt(ctx, db, CLEARING_LOG, latest.log_index, clearingCp.size);
  const receiptsCp = await cosignedCheckpoint(ctx, RECEIPTS_LOG);
  const to = attestation.receipts.to;
  const consistency = to > 0 && to <= receiptsCp.size ? (await consistencyProof(db, RECEIPTS_LOG, to, receiptsCp.size)).map(b64) : [];
  return {
    attestation,
    leaf: b64(entry!.leaf),
    clearing: { ...proof.inclusion, checkpoint: { ...proof.checkpoint, note: clearingCp.note } },
    receipts: {
      log: RECEIPTS_LOG,
      origin: logOrigin(ctx.config.SITE_URL, RECEIPTS_LOG),
      checkpoint: { tree_size: receiptsCp.size, root_hash: b64(receiptsCp.root), note: receiptsCp.note },
      consistency: { from: to, to: receiptsCp.size, hashes: consistency },
    },
    how_to_verify: [
      'Check clearing.checkpoint.note with the verifier_key of GET /api/v1/logs/clearing; check clearing.hashes as the RFC 9162 inclusion proof of SHA-256(0x00 || base64-decoded leaf) at clearing.index.',
      'The leaf is the canonical JSON of attestation. net_root is the RFC 9162 root over the canonical JSON of each per_sku entry, in order.',
      'Check receipts.checkpoint.note with the verifier_key of GET /api/v1/logs/receipts; check receipts.consistency from the attested size (attestation.receipts.to, root attestation.receipts.tree_root) to the checkpoint: the attested receipts log is a prefix of the signed one.',
      'Recount attestation.receipts.acts from GET /api/v1/logs/receipts/entries over [from, to): each leaf is a receipt JWS whose payload has kind and decision.',
    ],
  };
}

export function registerClearingRoutes(router: Router, ctx: AppContext): void {
  const hours = ctx.config.CLEARING_INTERVAL_HOURS;
  if (hours > 0) {
    const periodMs = hours * 3_600_000;
    const tick = async () => {
      const last = await latestClearing(ctx.ledger.read);
      const since = last?.period_end || (await firstReceiptAt(ctx.ledger.read));
      if (since && Date.now() - Date.parse(since) >= periodMs) await sealNow(ctx.ledger);
    };
    // A deployment without a checkpoint seals its first one as it starts (re-checked under the
    // write lock, so two processes starting together seal one), not a whole period later.
    const first = () =>
      ctx.ledger.write(async (tx) => {
        if (!(await latestClearing(tx))) await sealClearing(tx, new Date());
      });
    router.job(intervalJob(ctx, 'clearing seal', Math.min(periodMs, 60_000), tick, first));
  }

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/clearing/network/latest.json',
      summary:
        'The newest clearing checkpoint: a Merkle net attestation of per-SKU totals over a range of the receipts log, with its proofs',
      auth: 'public',
      tag: 'clearing',
      response: z.looseObject({
        attestation: z.looseObject({}),
        leaf: z.string(),
        clearing: z.looseObject({}),
        receipts: z.looseObject({}),
      }),
      problems: [404],
    },
    async () => {
      const ev = await latestEvidence(ctx);
      if (!ev) throw notFound('no clearing checkpoint has been sealed yet', 'no_clearing_checkpoint');
      return reply(ev, 200, PUBLIC);
    },
  );

  liveCatalog(
    router,
    ctx,
    { path: '/api/v1/clearing/catalog', catalog: 'clearing' },
    async () => {
      const ev = await latestEvidence(ctx);
      return {
        network_checkpoint: ev
          ? {
              checkpoint_id: ev.attestation.checkpoint_id,
              period_start: ev.attestation.period_start,
              period_end: ev.attestation.period_end,
              receipts: {
                from: ev.attestation.receipts.from,
                to: ev.attestation.receipts.to,
                tree_root: ev.attestation.receipts.tree_root,
              },
              net_root: ev.attestation.net_root,
              total_usd: ev.attestation.total_usd,
              clearing_index: ev.clearing.index,
              checkpoint: ev.clearing.checkpoint.note,
            }
          : null,
      };
    },
    {
      summary: 'The clearing catalog (svc-clearing-window-v1) with network_checkpoint showing the newest checkpoint',
      auth: 'public',
      tag: 'clearing',
    },
  );
}

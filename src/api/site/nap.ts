/**
 * NAP (SPEC 2.4, 4.2): counterfactual replay of a refused act, spoliation
 * seals, and the key's NAP usage. Both writes are NAP SKUs (premiums).
 */
import { record } from '../../ledger/records.ts';
import { SPOLIATION_SEALS } from '../../ledger/nap.ts';
import { z } from 'zod';
import { fingerprint } from '../../crypto/canonical.ts';
import { usdToMicros } from '../../catalog/money.ts';
import { evidenceRoot, NotReplayable, replay, replaySource } from '../../domain/nap.ts';
import { FUSE_STATES } from '../../ledger/fuses.ts';
import { usage } from '../../ledger/meter.ts';
import { getReceipt } from '../../ledger/receipts.ts';
import { receiptVisibleTo } from '../../ledger/accounts.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import { DATA } from '../../catalog/catalogs.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, meteredAct, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref, usdAmount, usdString } from './schemas.ts';
import { operation } from '../operation.ts';

export const replayRequest = z.strictObject({
  receipt_id: z
    .string()
    .regex(/^rcpt_[A-Za-z0-9_-]{1,64}$/, 'a receipt id such as rcpt_…')
    .describe('a refusal receipt of yours (execute-gate, hop or act)'),
  assume: z
    .strictObject({
      state: z.enum(FUSE_STATES).optional().describe('the fuse state to assume instead of the recorded one'),
      in_surface: z.boolean().optional().describe('assume the act kind was (or was not) in the declared surface'),
      exposure_usd: usdAmount.optional(),
      hold_above_usd: usdAmount.nullable().optional().describe('null assumes no hold threshold'),
      review_requested: z.boolean().optional(),
    })
    .default({})
    .describe('facts to assume instead of the recorded ones; none replays the act exactly as refused'),
});

/**
 * The seal's own body limit: its documented 1 to 1000 evidence items, each with
 * a 256-character name (up to 4 UTF-8 bytes a character) and a 64-digit hash,
 * must fit, which MAX_BODY_BYTES (64 KiB by default) does not allow.
 */
export const SPOLIATION_MAX_BODY_BYTES = 1_200_000;

export const spoliationSealRequest = z.strictObject({
  matter_ref: ref.describe('your reference of the matter (case, claim, incident)'),
  evidence: z
    .array(
      z.strictObject({
        name: z.string().min(1).max(256).describe('what the item is (a file name, an export id)'),
        sha256: z.string().regex(/^[0-9a-f]{64}$/, 'the SHA-256 of the item, 64 lowercase hex digits'),
      }),
    )
    .min(1)
    .max(1000)
    .refine((e) => new Set(e.map((x) => x?.name)).size === e.length, { message: 'evidence names must be unique' }),
  refers_to: z
    .string()
    .regex(/^rcpt_[A-Za-z0-9_-]{1,64}$/)
    .optional()
    .describe('a receipt of yours this evidence is about (e.g. the refusal)'),
});

const factsSchema = z.object({
  state: z.string(),
  in_surface: z.boolean(),
  exposure_micros: z.number(),
  hold_above_micros: z.number().nullable(),
  review_requested: z.boolean(),
});
const outcomeSchema = z.object({ decision: z.string(), rule: z.string(), reason: z.string() });
export const replayResponse = z.object({
  replay_id: z.string(),
  original: z.object({ receipt_id: z.string(), kind: z.string(), decision: z.string(), facts: factsSchema }),
  rules_version: z.string(),
  assumed: factsSchema,
  replayed: outcomeSchema,
  would_have_acted: z.boolean(),
  changed: z.boolean(),
  charge: chargeSchema,
  ...receiptRef,
});
export const spoliationSealResponse = z.object({
  seal_id: z.string(),
  matter_ref: z.string(),
  evidence_count: z.number(),
  root_hash: z.string().describe('RFC 9162 Merkle root (hex) over the evidence SHA-256s in request order'),
  leaf_rule: z.string(),
  charge: chargeSchema,
  ...receiptRef,
});
export const napUsageResponse = z.object({
  key_id: z.string(),
  nap_rule: z.string(),
  by_sku: z.array(z.object({ sku: z.string(), count: z.number(), amount_usd: usdString })),
  nap_usd: usdString,
  total_usd: usdString,
  nap_share_of_spend: z.number(),
});

const unprocessable = (code: string, detail: string) => new Problem({ status: 422, code, title: 'Unprocessable', detail });

export function registerNapRoutes(router: Router, ctx: AppContext): void {
  const limit = ctx.config.MAX_BODY_BYTES;

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/tcb/counterfactual-replay',
      auth: 'key',
      tool: 'counterfactual_replay',
      summary:
        'Replays a refused act of yours against the rules in force when it was refused (optionally assuming other facts) and seals what would have happened',
      tag: 'nap',
      body: replayRequest,
      response: replayResponse,
      problems: [404, 409, 422],
      charges: ['ccr'],
      chargeRules: { ccr: { nap: true } },
      example: { receipt_id: 'rcpt_5Hq2LmX8vR3tKp9WzN4cBd', assume: { state: 'LIVE' } },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const original = await getReceipt(ctx.ledger.read, b.receipt_id);
      // Another key's receipt is answered like a missing one.
      if (!original || !(await receiptVisibleTo(ctx.ledger.read, original.payload.key_id, key)))
        throw notFound(`no receipt ${b.receipt_id} of this key`, 'unknown_receipt');
      let src;
      try {
        src = replaySource(original.payload.kind, original.payload.decision, original.payload.data);
      } catch (e) {
        if (e instanceof NotReplayable) throw unprocessable('not_replayable', e.message);
        throw e;
      }
      const a = b.assume;
      const { facts, outcome } = replay(src, {
        ...(a.state ? { state: a.state } : {}),
        ...(a.in_surface !== undefined ? { in_surface: a.in_surface } : {}),
        ...(a.exposure_usd ? { exposure_micros: usdToMicros(a.exposure_usd) } : {}),
        ...(a.hold_above_usd !== undefined ? { hold_above_micros: a.hold_above_usd === null ? null : usdToMicros(a.hold_above_usd) } : {}),
        ...(a.review_requested !== undefined ? { review_requested: a.review_requested } : {}),
      });
      const charge = bill('ccr');
      const body = {
        original: { receipt_id: original.receipt_id, kind: original.payload.kind, decision: original.payload.decision, facts: src.facts },
        rules_version: src.rules_version,
        assumed: facts,
        replayed: outcome,
        would_have_acted: outcome.decision === 'PERMIT',
        changed: outcome.decision !== original.payload.decision,
      };
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'counterfactual_replay',
          decision: outcome.decision,
          subject: original.receipt_id,
          fingerprint: fingerprint(b),
          data: body,
        },
        [charge],
        (receipt) => ({ reply: reply({ replay_id: receipt.receipt_id, ...body, charge: chargeView(charge), ...receiptFields(receipt) }) }),
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/spoliation-seal',
      auth: 'key',
      tool: 'spoliation_seal',
      summary: 'Seals a set of evidence hashes (their Merkle root) into a signed, logged receipt',
      tag: 'nap',
      body: spoliationSealRequest,
      bodyLimit: Math.max(limit, SPOLIATION_MAX_BODY_BYTES),
      response: spoliationSealResponse,
      problems: [404, 409, 422],
      charges: ['spoliation_seal'],
      chargeRules: { spoliation_seal: { nap: true } },
      example: {
        matter_ref: 'claim-2026-118',
        evidence: [{ name: 'chat-export.jsonl', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }],
      },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      if (b.refers_to) {
        const r = await getReceipt(ctx.ledger.read, b.refers_to);
        if (!r || !(await receiptVisibleTo(ctx.ledger.read, r.payload.key_id, key)))
          throw notFound(`no receipt ${b.refers_to} of this key`, 'unknown_receipt');
      }
      const root = evidenceRoot(b.evidence.map((e) => e.sha256));
      const charge = bill('spoliation_seal');
      const sealId = newSortableId('seal');
      const leafRule = 'RFC 9162: leaf i = SHA-256(0x00 || raw 32 bytes of evidence[i].sha256), in request order';
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'spoliation_seal',
          decision: 'SEALED',
          subject: b.matter_ref,
          fingerprint: fingerprint(b.evidence),
          // The list itself is one commitment (its owner opens it): file names are caller free text, and
          // a thousand items listed one by one would not fit one log entry; root_hash commits to the digests.
          data: {
            seal_id: sealId,
            root_hash: root,
            evidence_count: b.evidence.length,
            evidence: b.evidence,
            ...(b.refers_to ? { refers_to: b.refers_to } : {}),
          },
        },
        [charge],
        (receipt) => ({
          record: record(SPOLIATION_SEALS, {
            id: sealId,
            keyId: key.id,
            matterRef: b.matter_ref,
            evidenceCount: b.evidence.length,
            rootHash: root,
            receiptId: receipt.receipt_id,
            createdAt: nowIso(),
          }),
          reply: reply({
            seal_id: sealId,
            matter_ref: b.matter_ref,
            evidence_count: b.evidence.length,
            root_hash: root,
            leaf_rule: leafRule,
            charge: chargeView(charge),
            ...receiptFields(receipt),
          }),
        }),
        { commit: ['subject', 'data.evidence'] },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/nap/usage',
      tool: 'nap_usage',
      summary: "The calling key's negative-act premium charges per NAP SKU, and their share of its spend",
      auth: 'key',
      tag: 'nap',
      response: napUsageResponse,
    },
    async ({ key }) => {
      const u = await usage(ctx.ledger.read, key.id);
      const nap = u.by_sku.filter((x) => x.nap).map(({ sku, count, amount_usd }) => ({ sku, count, amount_usd }));
      // The share from exact totals (bigint), to six decimals, then a number.
      const share = u.total_micros === 0n ? 0 : Number((u.nap_micros * 1_000_000n) / u.total_micros) / 1_000_000;
      return reply({
        key_id: key.id,
        nap_rule: DATA.nap.nap_rule,
        by_sku: nap,
        nap_usd: u.nap_usd,
        total_usd: u.total_usd,
        nap_share_of_spend: share,
      });
    },
  );
}

/**
 * Conformity packs (SPEC 2.5, foundry layer 5):
 *   POST /api/v1/conformity/generate       key, conformity_pack 2.50   a sealed pack for one category
 *   GET  /api/v1/conformity/packs/{pack_id} key (its account)           the stored pack, byte for byte re-hashable
 * The pack's rules are in src/domain/conformity.ts.
 */
import { record } from '../../ledger/records.ts';
import { z } from 'zod';
import { CATEGORY_IDS, ConformityRefusal, buildPack, packHash } from '../../domain/conformity.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { findConformityPack, CONFORMITY_PACKS } from '../../ledger/conformity.ts';
import { RECEIPTS_LOG } from '../../ledger/receipts.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, meteredAct, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref } from './schemas.ts';
import { operation } from '../operation.ts';

const line = (max: number, what: string) => z.string().trim().min(1).max(max).describe(what);

export const generateRequest = z.strictObject({
  category_id: z.enum(CATEGORY_IDS).describe('one of the foundry catalog conformity categories'),
  system: z.strictObject({
    name: line(200, 'the AI system'),
    version: line(64, 'its version'),
    provider: line(200, 'who places it on the market'),
    intended_purpose: line(2000, 'what it is for, as the instructions for use say'),
  }),
  deployer: ref.optional().describe('who uses it, by reference'),
  evidence: z.record(z.string(), ref).optional().describe('risk control -> a reference to its evidence; controls not named stay open'),
});

const packSchema = z.looseObject({
  format: z.string(),
  category: z.looseObject({ category_id: z.string(), annex_iii: z.string().nullable() }),
});
export const generateResponse = z.object({
  pack_id: z.string(),
  pack: packSchema,
  pack_hash: z.string().describe('SHA-256 (hex) of the canonical JSON of `pack`: the value the receipt seals'),
  charge: chargeSchema,
  ...receiptRef,
});
const storedPackResponse = z.object({
  pack_id: z.string(),
  pack: packSchema,
  pack_hash: z.string(),
  receipt_id: z.string(),
  created_at: z.string(),
});

/** Where Art 12 records sealed by this gate can be read and checked: the receipts log. */
export function receiptsLogUrls(ctx: AppContext): { entries_url: string; checkpoint_url: string } {
  const log = `${ctx.config.BASE_URL}/api/v1/logs/${RECEIPTS_LOG}`;
  return { entries_url: `${log}/entries`, checkpoint_url: `${log}/checkpoint` };
}

export function registerConformityRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/conformity/generate',
      auth: 'key',
      tool: 'conformity_generate',
      summary:
        'Generates a sealed AI Act conformity pack for one category: Annex III category, Art 12 record-keeping envelope, risk controls (evidenced or open), technical-file scaffold',
      tag: 'foundry',
      body: generateRequest,
      response: generateResponse,
      problems: [422],
      charges: ['conformity_pack'],
      example: {
        category_id: 'insurance',
        system: {
          name: 'Underwriting assistant',
          version: '2.1.0',
          provider: 'Example Insurer SE',
          intended_purpose: 'Scores life-insurance applications for a human underwriter',
        },
        evidence: { 'actuarial review': 'doc-2026-114' },
      },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      let pack;
      try {
        pack = buildPack({ ...b, generated_at: nowIso(), log: receiptsLogUrls(ctx) });
      } catch (e) {
        if (e instanceof ConformityRefusal)
          throw new Problem({ status: 422, code: e.code, title: 'Unprocessable content', detail: e.message });
        throw e;
      }
      const hash = packHash(pack);
      const packId = newSortableId('cpk');
      const charge = bill('conformity_pack');
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'conformity_pack',
          decision: 'SEALED',
          subject: packId,
          fingerprint: hash,
          data: { category_id: b.category_id, open_controls: pack.open_controls },
        },
        [charge],
        (receipt) => ({
          record: record(CONFORMITY_PACKS, {
            id: packId,
            owner: ownerId(key),
            categoryId: b.category_id,
            packHash: hash,
            receiptId: receipt.receipt_id,
            createdAt: pack.generated_at,
            pack,
          }),
          reply: reply({ pack_id: packId, pack, pack_hash: hash, charge: chargeView(charge), ...receiptFields(receipt) }),
        }),
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/conformity/packs/:pack_id',
      tool: 'conformity_pack',
      summary: 'A conformity pack a key of this account generated, as sealed (re-hash `pack` to check `pack_hash`)',
      auth: 'key',
      tag: 'foundry',
      response: storedPackResponse,
      problems: [404],
    },
    async ({ key, params }) => {
      const id = params.pack_id ?? '';
      const r = await findConformityPack(ctx.ledger.read, id, ownerId(key));
      if (!r) throw notFound(`no conformity pack ${id} in this account`);
      return reply({ pack_id: id, ...r });
    },
  );
}

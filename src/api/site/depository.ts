/**
 * Depository attestation (SPEC 2.5, 6): POST /api/v1/depository/attest.
 * Rules in src/domain/depository.ts; each attestation extends the asset's
 * hash chain and is sealed, charged at the dtcc_attest toll.
 */
import { z } from 'zod';
import { CHAIN_RULE, DepositoryRefusal, GENESIS, applyEvent, chainHash, type DepositoryEvent } from '../../domain/depository.ts';
import { nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { findDepositoryAsset, recordDepositoryAttestation } from '../../ledger/depository.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, committed, committedFingerprint, meteredWrite, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref } from './schemas.ts';
import { retryIfStale, StateChanged } from '../stale-retry.ts';
import { operation } from '../operation.ts';

/** The caller's text in a depository receipt (docs/public-log.md): the asset id, custodians and custody reference. */
const COMMITTED_PATHS = [
  'subject',
  'data.event.asset_id',
  'data.event.custodian',
  'data.event.custody_ref',
  'data.event.to_custodian',
  'data.event.from_custodian',
  'data.after.custodian',
];

const units = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).describe('whole units of the asset');
const common = {
  asset_id: ref.describe('your identifier of the asset (ISIN, CUSIP, internal id)'),
  attested_custody_units: z
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("the custodian's statement of units in custody after the event; refused if it breaks parity"),
};

export const attestRequest = z
  .discriminatedUnion('event_type', [
    z.strictObject({
      event_type: z.literal('tokenize'),
      ...common,
      units,
      custodian: ref.optional().describe('who holds the asset in custody'),
    }),
    z.strictObject({
      event_type: z.literal('mint'),
      ...common,
      units,
      custody_ref: ref.describe('the custody record the new units are minted against'),
    }),
    z.strictObject({ event_type: z.literal('burn'), ...common, units }),
    z.strictObject({
      event_type: z.literal('corporate_action'),
      ...common,
      action: z.enum(['dividend', 'split', 'governance']),
      split_ratio: z.number().int().min(2).max(1000).optional().describe('for a split: new units per old unit'),
    }),
    z.strictObject({
      event_type: z.literal('custody_transfer'),
      ...common,
      to_custodian: ref,
      from_custodian: ref.optional().describe('must be the current custodian when given'),
    }),
  ])
  .superRefine((b, c) => {
    if (b?.event_type === 'corporate_action' && (b.action === 'split') !== (b.split_ratio !== undefined)) {
      c.addIssue({ code: 'custom', path: ['split_ratio'], message: 'split_ratio is required for a split, and only for a split' });
    }
  });

const twinSchema = z.object({ custody_units: z.number(), token_supply: z.number(), custodian: z.string().nullable() });
export const attestResponse = z.object({
  attestation_id: z.string(),
  asset_id: z.string(),
  event_type: z.string(),
  before: twinSchema,
  after: twinSchema,
  parity: z.object({ holds: z.literal(true), custody_units: z.number(), token_supply: z.number() }),
  chain: z.object({ seq: z.number(), prev_hash: z.string(), chain_hash: z.string(), rule: z.string() }),
  charge: chargeSchema,
  ...receiptRef,
});

export function registerDepositoryRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/depository/attest',
      auth: 'key',
      tool: 'depository_attest',
      summary:
        'Attests a depository event (tokenize, mint, burn, corporate_action, custody_transfer) on a tokenized twin; custody units and token supply stay equal (parity), each event extends the asset hash chain',
      tag: 'foundry',
      body: attestRequest,
      response: attestResponse,
      problems: [404, 409, 422],
      charges: ['dtcc_attest'],
      example: { event_type: 'tokenize', asset_id: 'US0378331005', units: 1000, custodian: 'custodian-a' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const ev: DepositoryEvent = {
        event_type: b.event_type,
        attested_custody_units: b.attested_custody_units,
        ...('units' in b ? { units: b.units } : {}),
        ...(b.event_type === 'tokenize' && b.custodian ? { to_custodian: b.custodian } : {}),
        ...(b.event_type === 'mint' ? { custody_ref: b.custody_ref } : {}),
        ...(b.event_type === 'corporate_action' ? { action: b.action, split_ratio: b.split_ratio } : {}),
        ...(b.event_type === 'custody_transfer' ? { to_custodian: b.to_custodian, from_custodian: b.from_custodian } : {}),
      };
      for (let attempt = 0; ; attempt++) {
        const before = await findDepositoryAsset(ctx.ledger.read, ownerId(key), b.asset_id);
        let after;
        try {
          after = applyEvent(before, ev);
        } catch (e) {
          if (!(e instanceof DepositoryRefusal)) throw e;
          throw new Problem({
            status: e.code === 'unknown_asset' ? 404 : 409,
            code: e.code,
            title: e.code === 'unknown_asset' ? 'Not found' : 'Conflict',
            detail: e.message,
          });
        }
        const seq = (before?.seq ?? 0) + 1;
        const prev = before?.chain_hash ?? GENESIS;
        const charge = bill('dtcc_attest');
        const view = (t: { custody_units: number; token_supply: number; custodian: string | null }) => ({
          custody_units: t.custody_units,
          token_supply: t.token_supply,
          custodian: t.custodian,
        });
        // The caller's text is committed first; the chain link hashes the event as the public receipt then shows it.
        const c = committed(
          {
            kind: 'depository_attest',
            decision: 'ATTESTED',
            subject: b.asset_id,
            fingerprint: '',
            data: { event: b, seq, chain_rule: CHAIN_RULE.id, prev_hash: prev, after: view(after) },
          },
          COMMITTED_PATHS,
        );
        const chain = chainHash(prev, { ...(c.input.data!.event as object), seq });
        const data = { ...c.input.data, chain_hash: chain };
        const input = { ...c.input, data, fingerprint: committedFingerprint({ subject: c.input.subject, data }) };
        try {
          return await meteredWrite(
            event,
            ctx,
            key,
            input,
            [charge],
            async (tx, receipt) => {
              const now = await findDepositoryAsset(tx, ownerId(key), b.asset_id);
              if ((now?.seq ?? 0) !== (before?.seq ?? 0)) throw new StateChanged();
              await recordDepositoryAttestation(tx, {
                owner: ownerId(key),
                assetId: b.asset_id,
                eventType: b.event_type,
                twin: { ...after, seq, chain_hash: chain },
                receiptId: receipt.receipt_id,
                at: nowIso(),
              });
              return reply({
                attestation_id: receipt.receipt_id,
                asset_id: b.asset_id,
                event_type: b.event_type,
                before: view(before ?? { custody_units: 0, token_supply: 0, custodian: null }),
                after: view(after),
                parity: { holds: true, custody_units: after.custody_units, token_supply: after.token_supply },
                chain: { seq, prev_hash: prev, chain_hash: chain, rule: CHAIN_RULE.text },
                charge: chargeView(charge),
                ...receiptFields(receipt),
              });
            },
            { commit: { input, openings: c.openings } },
          );
        } catch (e) {
          if (retryIfStale(e, attempt)) continue;
          throw e;
        }
      }
    },
  );
}

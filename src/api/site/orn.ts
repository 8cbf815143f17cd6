/**
 * ORN (SPEC 2.4, 4.2): General Average declare (flat toll plus a pro rata
 * allocation export) and SHARP slices (agents x SHARP toll x events). Tolls
 * come from the ORN catalog (sharp_toll_usd, ga_declare_toll_usd).
 */
import { record } from '../../ledger/records.ts';
import { ORN_EVENTS } from '../../ledger/orn.ts';
import { z } from 'zod';
import { fingerprint } from '../../crypto/canonical.ts';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { SHARP_TOLL_MICROS, allocateGeneralAverage, allocationCsv } from '../../domain/orn.ts';
import { newSortableId, nowIso } from '../../ids.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, meteredAct, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref, usdAmount, usdString } from './schemas.ts';
import { operation } from '../operation.ts';

export const gaDeclareRequest = z.strictObject({
  event_ref: ref.describe('your reference of the loss event'),
  graph_id: ref.optional().describe('the agent graph the parties belong to'),
  loss_usd: usdAmount.describe('the general-average loss to allocate'),
  parties: z
    .array(
      z.strictObject({ party_id: ref, contributed_value_usd: usdAmount.describe('value the party had at stake (its contributory value)') }),
    )
    .min(2)
    .max(500)
    .refine((p) => new Set(p.map((x) => x?.party_id)).size === p.length, { message: 'party_id must be unique' })
    // Refinements also run on items that failed: look at the text, never parse it here.
    .refine((p) => p.some((x) => /[1-9]/.test(String(x?.contributed_value_usd))), {
      message: 'at least one contributed value must be above zero',
    }),
});

export const sharpRequest = z.strictObject({
  graph_id: ref.describe('the agent graph (orchestration) being metered'),
  agents_in_graph: z.number().int().min(1).max(10_000),
  events: z.number().int().min(1).max(100_000).describe('orchestration events in this slice'),
  slice_ref: ref.optional().describe('your reference of the slice (a chain or run id)'),
});

export const gaDeclareResponse = z.object({
  declaration_id: z.string(),
  event_ref: z.string(),
  graph_id: z.string().nullable(),
  loss_usd: usdString,
  contributed_total_usd: usdString,
  allocations: z.array(
    z.object({ party_id: z.string(), contributed_value_usd: usdString, share_pct: z.string(), allocation_usd: usdString }),
  ),
  export: z.object({ format: z.literal('text/csv'), filename: z.string(), content: z.string() }),
  charge: chargeSchema,
  ...receiptRef,
});
export const sharpResponse = z.object({
  slice_id: z.string(),
  graph_id: z.string(),
  agents_in_graph: z.number(),
  events: z.number(),
  sharp_toll_usd: usdString,
  charge: chargeSchema,
  ...receiptRef,
});

export function registerOrnRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/orn/declare',
      auth: 'key',
      tool: 'orn_declare',
      summary:
        "General Average declare: allocates a loss pro rata to the parties' contributed values (exact to the micro-USD), with a CSV export; flat toll",
      tag: 'orn',
      body: gaDeclareRequest,
      response: gaDeclareResponse,
      problems: [409, 422],
      charges: ['ga_declare'],
      chargeRules: { ga_declare: { price: 'ga_declare' } },
      example: {
        event_ref: 'incident-42',
        graph_id: 'swarm-7',
        loss_usd: '9000.00',
        parties: [
          { party_id: 'planner', contributed_value_usd: '20000' },
          { party_id: 'executor', contributed_value_usd: '10000' },
        ],
      },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const loss = BigInt(usdToMicros(b.loss_usd));
      const parties = b.parties.map((p) => ({ party_id: p.party_id, value_micros: BigInt(usdToMicros(p.contributed_value_usd)) }));
      const alloc = allocateGeneralAverage(loss, parties);
      const allocations = alloc.map(({ allocation_micros: _, ...a }) => a);
      const total = parties.reduce((a, p) => a + p.value_micros, 0n);
      const id = newSortableId('ga');
      const charge = bill('ga_declare');
      const body = {
        declaration_id: id,
        event_ref: b.event_ref,
        graph_id: b.graph_id ?? null,
        loss_usd: formatUsd(loss),
        contributed_total_usd: formatUsd(total),
        allocations,
        export: { format: 'text/csv' as const, filename: `general-average-${id}.csv`, content: allocationCsv(alloc) },
        charge: chargeView(charge),
      };
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'orn_ga_declare',
          decision: 'DECLARED',
          subject: b.event_ref,
          fingerprint: fingerprint(b),
          data: { declaration_id: id, graph_id: b.graph_id, loss_usd: body.loss_usd, allocations },
        },
        [charge],
        (receipt) => ({
          record: record(ORN_EVENTS, {
            id,
            keyId: key.id,
            kind: 'ga_declare',
            graphId: b.graph_id ?? null,
            amountMicros: BigInt(charge.amountMicros),
            receiptId: receipt.receipt_id,
            createdAt: nowIso(),
          }),
          reply: reply({ ...body, ...receiptFields(receipt) }),
        }),
        { commit: ['subject', 'data.allocations.*.party_id'] },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/orn/sharp',
      auth: 'key',
      tool: 'orn_sharp',
      summary: 'SHARP slice: meters a multi-agent chain as agents_in_graph x SHARP toll x orchestration events',
      tag: 'orn',
      body: sharpRequest,
      response: sharpResponse,
      problems: [409, 422],
      charges: ['sharp'],
      chargeRules: { sharp: { amount: 'orn_sharp' } },
      example: { graph_id: 'swarm-7', agents_in_graph: 5, events: 3 },
      act: { lane: true },
    },
    async ({ input: b, key, event, bill }) => {
      const id = newSortableId('sharp');
      const charge = bill('sharp', { agents: b.agents_in_graph, events: b.events });
      const amount = BigInt(charge.amountMicros);
      return meteredAct(
        event,
        ctx,
        key,
        {
          kind: 'orn_sharp',
          decision: 'METERED',
          subject: b.graph_id,
          fingerprint: fingerprint(b),
          data: {
            slice_id: id,
            agents_in_graph: b.agents_in_graph,
            events: b.events,
            amount_usd: formatUsd(amount),
            ...(b.slice_ref ? { slice_ref: b.slice_ref } : {}),
          },
        },
        [charge],
        (receipt) => ({
          record: record(ORN_EVENTS, {
            id,
            keyId: key.id,
            kind: 'sharp',
            graphId: b.graph_id,
            amountMicros: amount,
            receiptId: receipt.receipt_id,
            createdAt: nowIso(),
          }),
          reply: reply({
            slice_id: id,
            graph_id: b.graph_id,
            agents_in_graph: b.agents_in_graph,
            events: b.events,
            sharp_toll_usd: formatUsd(SHARP_TOLL_MICROS),
            charge: { sku: 'sharp', amount_usd: formatUsd(amount), nap: false },
            ...receiptFields(receipt),
          }),
        }),
      );
    },
  );
}

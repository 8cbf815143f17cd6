/**
 * PDTR (SPEC 2.4, 4.2): the payment-decision twin receipt binds an x402
 * payment_hash to the action_ref it paid for, once per payment hash, ever.
 */
import { z } from 'zod';
import { DATA } from '../../catalog/catalogs.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { getReceipt } from '../../ledger/receipts.ts';
import { ownerId, receiptVisibleTo } from '../../ledger/accounts.ts';
import { bindPaymentHash, findPaymentBinding } from '../../ledger/pdtr.ts';
import { nowIso } from '../../ids.ts';
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { chargeView, meteredWrite, receiptFields } from './metered.ts';
import { chargeSchema, receiptRef, ref } from './schemas.ts';
import { operation } from '../operation.ts';

const RAILS = DATA.pdtr.rails.map((r) => r.id) as [string, ...string[]];

export const bindPaymentRequest = z.strictObject({
  payment_hash: z
    .string()
    .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'a 32-byte payment hash: 64 hex digits, optionally 0x-prefixed')
    .transform((h) => '0x' + h.replace(/^0x/, '').toLowerCase())
    .describe('the x402 payment (settlement transaction) hash; compared case-insensitively'),
  action_ref: ref.describe('your reference of the action the payment paid for (an order id, a receipt id)'),
  rail: z.enum(RAILS).default(RAILS[0]).describe('the payment rail, from the PDTR catalog'),
  receipt_id: z
    .string()
    .regex(/^rcpt_[A-Za-z0-9_-]{1,64}$/)
    .optional()
    .describe('a gate receipt of yours for the action (e.g. its execute-gate PERMIT)'),
});

export const bindPaymentResponse = z.object({
  binding_id: z.string(),
  payment_hash: z.string(),
  action_ref: z.string(),
  rail: z.string(),
  action_receipt_id: z.string().nullable(),
  bound_at: z.string(),
  charge: chargeSchema,
  ...receiptRef,
});

export function registerPdtrRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/bind-payment',
      auth: 'key',
      tool: 'pdtr_bind_payment',
      summary: 'Binds an x402 payment_hash to the action_ref it paid for (one binding per payment hash), sealed as a twin receipt',
      tag: 'pdtr',
      body: bindPaymentRequest,
      response: bindPaymentResponse,
      problems: [404, 409, 422],
      charges: ['pdtr_bind'],
      example: { payment_hash: '0x' + 'ab'.repeat(32), action_ref: 'order-7731' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      if (b.receipt_id) {
        const r = await getReceipt(ctx.ledger.read, b.receipt_id);
        if (!r || !(await receiptVisibleTo(ctx.ledger.read, r.payload.key_id, key)))
          throw notFound(`no receipt ${b.receipt_id} of this key`, 'unknown_receipt');
      }
      const charge = bill('pdtr_bind');
      const boundAt = nowIso();
      return meteredWrite(
        event,
        ctx,
        key,
        {
          kind: 'pdtr_bind',
          decision: 'BOUND',
          subject: b.payment_hash,
          fingerprint: fingerprint({ payment_hash: b.payment_hash, action_ref: b.action_ref }),
          data: {
            payment_hash: b.payment_hash,
            action_ref: b.action_ref,
            rail: b.rail,
            ...(b.receipt_id ? { action_receipt_id: b.receipt_id } : {}),
          },
        },
        [charge],
        async (tx, receipt) => {
          const bound = await bindPaymentHash(tx, {
            paymentHash: b.payment_hash,
            actionRef: b.action_ref,
            owner: ownerId(key),
            receiptId: receipt.receipt_id,
            createdAt: boundAt,
          });
          if (!bound) {
            const prior = (await findPaymentBinding(tx, b.payment_hash))!;
            const mine = prior.owner === ownerId(key);
            throw new Problem({
              status: 409,
              code: 'payment_already_bound',
              title: 'Conflict',
              detail: `payment ${b.payment_hash} is already bound to an action; one binding per payment hash`,
              // The first binding's details only to the account that made it.
              extra: mine ? { bound_to: { action_ref: prior.action_ref, receipt_id: prior.receipt_id, bound_at: prior.created_at } } : {},
            });
          }
          return reply({
            binding_id: receipt.receipt_id,
            payment_hash: b.payment_hash,
            action_ref: b.action_ref,
            rail: b.rail,
            action_receipt_id: b.receipt_id ?? null,
            bound_at: boundAt,
            charge: chargeView(charge),
            ...receiptFields(receipt),
          });
        },
        // The action reference is the caller's own text: the public entry holds a commitment (docs/public-log.md).
        { commit: ['data.action_ref'] },
      );
    },
  );
}

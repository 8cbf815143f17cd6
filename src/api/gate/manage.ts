/**
 * The account's management operations the dashboard also offers (issue 14),
 * each an API call an operator key can make:
 *   GET  /v1/pas/licenses                        the account's licence parents (any key)
 *   GET  /v1/pas/tickets                         bind tickets, newest first (any key)
 *   GET  /v1/pas/grants                          MGA authority grants (operator)
 *   POST /v1/pas/grants                          {lines, states, max_premium, name?} (operator)
 *   POST /v1/pas/grants/{id}/revoke              (operator)
 *   POST /signal/trigger/webhooks/deliveries/{id}/retry   (operator)
 */
import type { H3Event } from 'h3';
import { z } from 'zod';
import { formatUsd, usdToMicros } from '../../catalog/money.ts';
import { newId, nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { listLicenses, listTickets, retryDelivery, revokeOwnedGrant } from '../../ledger/account-views.ts';
import { insertGrant, listGrants, type StoredGrant } from '../../ledger/pas.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';
import { pick } from '../audit.ts';

const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
export const createGrantRequest = z.strictObject({
  lines: z
    .array(z.string().regex(/^[a-z0-9_]{1,64}$/, 'a line such as cyber'))
    .min(1)
    .max(50),
  states: z
    .array(z.string().regex(/^[A-Z]{2}$/, 'a two-letter state such as CA'))
    .min(1)
    .max(60),
  max_premium: z.string().regex(/^\d{1,12}(\.\d{1,2})?$/, 'a USD amount such as "250000.00"'),
  name: z.string().trim().min(1).max(200).optional(),
});
const grantResponse = z.object({
  object: z.literal('authority_grant'),
  grant_id: z.string(),
  name: z.string().nullable(),
  lines: z.array(z.string()),
  states: z.array(z.string()),
  max_premium: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
const ticketsQuery = z.object({ license_id: idSchema.optional(), limit: z.coerce.number().int().min(1).max(200).default(100) });

export const grantObject = (g: StoredGrant) => ({
  object: 'authority_grant',
  grant_id: g.id,
  name: g.name,
  lines: g.lines,
  states: g.states,
  max_premium: formatUsd(g.max_premium_micros),
  created_at: g.created_at,
  revoked_at: g.revoked_at,
});

export function registerManageRoutes(router: Router, ctx: AppContext): void {
  const param = (event: H3Event, name: string) => {
    const id = idSchema.safeParse(event.context.params?.[name]);
    return id.success ? id.data : '';
  };

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/licenses',
      tool: 'pas_licenses',
      summary: "The account's licence parents: stored state, last change and outstanding tickets",
      auth: 'key',
      tag: 'pas',
    },
    async ({ key }) => {
      return reply({ object: 'list', data: await listLicenses(ctx.ledger.read, ownerId(key), nowIso()) });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/tickets',
      tool: 'pas_tickets',
      summary: "The account's bind tickets, newest first (optionally of one licence)",
      auth: 'key',
      tag: 'pas',
      query: ticketsQuery,
    },
    async ({ key, input: q }) => {
      return reply({ object: 'list', data: await listTickets(ctx.ledger.read, ownerId(key), q.license_id, q.limit) });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/pas/grants',
      summary: "The account's delegated (MGA) authority grants",
      auth: 'key',
      role: 'operator',
      tag: 'pas',
      problems: [403],
    },
    async ({ key }) => {
      return reply({ object: 'list', data: (await listGrants(ctx.ledger.read, ownerId(key))).map(grantObject) });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/grants',
      audit: { action: 'grant.created', detail: (a) => pick(a, ['name', 'lines', 'states', 'max_premium']) },
      summary: 'Grant delegated (MGA) authority: premium, line and state limits that /v1/pas/mga-authority checks',
      auth: 'key',
      role: 'operator',
      tag: 'pas',
      body: createGrantRequest,
      response: grantResponse,
      responses: { 201: { description: 'The grant', schema: grantResponse } },
      problems: [403],
      example: { lines: ['cyber'], states: ['CA', 'NY'], max_premium: '250000.00', name: 'Acme MGA' },
    },
    async ({ key, input: b }) => {
      const g: StoredGrant = {
        id: newId('auth'),
        key_id: ownerId(key),
        name: b.name ?? null,
        lines: [...new Set(b.lines)],
        states: [...new Set(b.states)],
        max_premium_micros: usdToMicros(b.max_premium),
        created_at: nowIso(),
        revoked_at: null,
      };
      await ctx.ledger.write((tx) => insertGrant(tx, g));
      return reply(grantObject(g), 201);
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/pas/grants/:grant_id/revoke',
      audit: { action: 'grant.revoked', target: 'grant_id' },
      summary: 'Revoke an authority grant: checks against it answer 404 from then on',
      auth: 'key',
      role: 'operator',
      tag: 'pas',
      problems: [403, 404],
    },
    async ({ key, event }) => {
      const id = param(event, 'grant_id');
      if (!(await ctx.ledger.write((tx) => revokeOwnedGrant(tx, ownerId(key), id, nowIso()))))
        throw notFound(`no active grant ${id} in this account`, 'unknown_grant');
      return reply({ object: 'authority_grant', grant_id: id, revoked: true });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/signal/trigger/webhooks/deliveries/:delivery_id/retry',
      audit: { action: 'webhook.delivery_retried', target: 'delivery_id' },
      summary: 'Retry a failed (or pending) webhook delivery now',
      auth: 'key',
      role: 'operator',
      tag: 'triggers',
      problems: [403, 404, 409],
    },
    async ({ key, event }) => {
      const id = param(event, 'delivery_id');
      const was = await ctx.ledger.write((tx) => retryDelivery(tx, ownerId(key), id, Date.now()));
      if (was === undefined) throw notFound(`no delivery ${id} in this account`, 'unknown_delivery');
      if (was === 'delivered')
        throw new Problem({
          status: 409,
          code: 'already_delivered',
          title: 'Conflict',
          detail: `delivery ${id} was delivered: there is nothing to retry`,
        });
      return reply({ object: 'webhook_delivery', id, state: 'pending', retried: true });
    },
  );
}

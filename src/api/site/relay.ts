/**
 * Partner relay (SPEC 2.4, 4.2): partners enroll, then put track links
 * {SITE_URL}/go/{partner}/{target} in their renewal footers; a click is
 * counted and redirected. /go/{partner}/status reports a partner's clicks.
 */
import { HTTPResponse } from 'h3';
import { z } from 'zod';
import { DATA } from '../../catalog/catalogs.ts';
import { fingerprint } from '../../crypto/canonical.ts';
import { countClick, getPartner, insertPartner, partnerClicks, relayNetwork } from '../../ledger/relay.ts';
import { nowIso } from '../../ids.ts';
import targetsJson from '../../content/relay-targets.json' with { type: 'json' };
import {} from '../act.ts';
import type { AppContext } from '../context.ts';
import { Problem, notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { meteredWrite, receiptFields } from './metered.ts';
import { receiptRef } from './schemas.ts';
import { operation } from '../operation.ts';

/** Where each track target of the relay catalog lands (our choice; data in src/content/relay-targets.json). */
export const RELAY_TARGETS: Readonly<Record<string, string>> = z
  .record(z.enum(DATA.relay.track_targets as [string, ...string[]]), z.string().startsWith('/'))
  .refine((m) => DATA.relay.track_targets.every((t) => t in m), 'every track target needs a landing path')
  .parse(targetsJson);

const partnerId = z.string().regex(/^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$/, '3 to 40 lowercase letters, digits and inner hyphens');

export const enrollRequest = z.strictObject({
  partner_id: partnerId.refine((p) => p !== 'status', 'reserved').describe('the {partner} segment of your track links'),
  name: z.string().min(1).max(120).describe('your organisation, as shown on your status page'),
});

export const enrollResponse = z.object({
  partner_id: z.string(),
  name: z.string(),
  enrolled_at: z.string(),
  track_links: z.record(z.string(), z.url()),
  status_url: z.url(),
  wholesale_usd: z.record(z.string(), z.unknown()),
  rev_share: z.record(z.string(), z.unknown()),
  ...receiptRef,
});
export const statusResponse = z.object({
  partner_id: z.string(),
  name: z.string(),
  enrolled_at: z.string(),
  status: z.literal('active'),
  clicks: z.record(z.string(), z.number()),
  clicks_total: z.number(),
  track_links: z.record(z.string(), z.url()),
});
export const networkResponse = z.object({
  partners: z.number(),
  clicks_total: z.number(),
  clicks_by_target: z.record(z.string(), z.number()),
  top_partners: z.array(z.object({ partner_id: z.string(), clicks: z.number() })),
  targets: z.array(z.string()),
});

export function registerRelayRoutes(router: Router, ctx: AppContext): void {
  const site = ctx.config.SITE_URL.replace(/\/+$/, '');
  const links = (p: string) => Object.fromEntries(DATA.relay.track_targets.map((t) => [t, `${site}/go/${p}/${t}`]));

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/relay/enroll',
      auth: 'key',
      tool: 'relay_enroll',
      summary: 'Enrolls a relay partner (an operator key): returns its nine track links and its status page',
      tag: 'relay',
      role: 'operator',
      body: enrollRequest,
      response: enrollResponse,
      responses: { 201: { description: 'The partner, enrolled, with its track links', schema: enrollResponse } },
      problems: [409, 422],
      charges: [],
      example: { partner_id: 'acme-brokers', name: 'Acme Brokers' },
      act: {},
    },
    async ({ input: b, key, event }) => {
      const at = nowIso();
      // The relay has no toll (its revenue is the partner's spread): the enrollment is sealed, not charged.
      return meteredWrite(
        event,
        ctx,
        key,
        { kind: 'relay_enroll', decision: 'ENROLLED', subject: b.partner_id, fingerprint: fingerprint(b), data: { name: b.name } },
        [],
        async (tx, receipt) => {
          if (
            !(await insertPartner(tx, {
              partner_id: b.partner_id,
              key_id: key.id,
              name: b.name,
              receipt_id: receipt.receipt_id,
              created_at: at,
            }))
          ) {
            throw new Problem({
              status: 409,
              code: 'partner_taken',
              title: 'Conflict',
              detail: `partner id ${b.partner_id} is already enrolled`,
            });
          }
          return reply(
            {
              partner_id: b.partner_id,
              name: b.name,
              enrolled_at: at,
              track_links: links(b.partner_id),
              status_url: `${site}/go/${b.partner_id}/status`,
              wholesale_usd: DATA.relay.wholesale_usd,
              rev_share: DATA.relay.rev_share,
              ...receiptFields(receipt),
            },
            201,
          );
        },
        { commit: ['data.name'] },
      );
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/relay/network',
      summary: 'Relay network totals: partners, clicks per target, the partners with the most clicks',
      auth: 'public',
      tag: 'relay',
      response: networkResponse,
    },
    async () => reply({ ...(await relayNetwork(ctx.ledger.read)), targets: DATA.relay.track_targets }),
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/go/:partner/:target',
      summary:
        'A partner track link: counts the click and redirects (302) to the target page; target "status" answers the partner\'s click counts as JSON',
      auth: 'public',
      tag: 'relay',
      response: statusResponse,
      responses: {
        200: { description: 'Target "status": the partner\'s click counts', schema: statusResponse },
        302: { description: 'The click is counted; Location is the target page' },
      },
      problems: [404],
    },
    async ({ params }) => {
      const p = params.partner ?? '';
      const target = params.target ?? '';
      const partner = partnerId.safeParse(p).success ? await getPartner(ctx.ledger.read, p) : undefined;
      if (!partner) throw notFound(`no relay partner ${p}`, 'unknown_partner');
      if (target === 'status') {
        const clicks = await partnerClicks(ctx.ledger.read, partner.partner_id);
        return reply({
          partner_id: partner.partner_id,
          name: partner.name,
          enrolled_at: partner.created_at,
          status: 'active',
          clicks,
          clicks_total: Object.values(clicks).reduce((a, b) => a + b, 0),
          track_links: links(partner.partner_id),
        });
      }
      const path = RELAY_TARGETS[target];
      if (!path) {
        throw new Problem({
          status: 404,
          code: 'unknown_target',
          title: 'Not found',
          detail: `no track target ${target}; targets are ${DATA.relay.track_targets.join(', ')} and status`,
        });
      }
      await ctx.ledger.write((tx) => countClick(tx, partner.partner_id, target));
      return new HTTPResponse(null, {
        status: 302,
        headers: { location: `${site}${path}?via=${encodeURIComponent(partner.partner_id)}`, 'cache-control': 'no-store' },
      });
    },
  );
}

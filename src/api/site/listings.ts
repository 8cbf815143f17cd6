/**
 * Issuer-pays: list on the index (SPEC 2.4 stack attach step 11):
 *   POST /api/v1/issuer-pays/listings   key      list a vendor on the index for a year: vendor_listing_annual 4999.00
 *   GET  /api/v1/issuer-pays/listings   public   the vendors listed now
 * A listing is a publication: its vendor id and name are public (index, receipt).
 * It commits the account for a year, so it takes an operator key; the vendors
 * the catalog ranks stay the catalog's (domain/issuer-listing.ts).
 */
import { z } from 'zod';
import { DATA } from '../../catalog/catalogs.ts';
import { claimedRankedVendor } from '../../domain/issuer-listing.ts';
import { nowIso } from '../../ids.ts';
import { ownerId } from '../../ledger/accounts.ts';
import { activeListing, activeListings, insertListing } from '../../ledger/issuer-pays.ts';
import { commitAct } from '../act.ts';
import { chargeSchema, chargeView } from '../charge.ts';
import type { AppContext } from '../context.ts';
import { Problem } from '../problem.ts';
import { reply, toResponse } from '../reply.ts';
import type { Router } from '../router.ts';
import { operation } from '../operation.ts';

export const LISTING_SKU = 'vendor_listing_annual';
const YEAR_MS = 365 * 86_400_000;

export const listingRequest = z.strictObject({
  vendor: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{1,62}$/, 'a vendor id: lowercase letters, digits and -')
    .describe('the vendor id on the index'),
  name: z.string().min(1).max(120).describe('the name shown on the index (public)'),
  url: z.url().max(500).optional(),
});

const RANKED = DATA.issuer_pays.rankings.map((r) => r.vendor);

const listingResponse = z.looseObject({
  object: z.literal('issuer_listing'),
  vendor: z.string(),
  name: z.string(),
  listed_at: z.string(),
  listed_until: z.string(),
  charge: chargeSchema,
  receipt_id: z.string(),
});

export function registerListingRoutes(router: Router, ctx: AppContext): void {
  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/api/v1/issuer-pays/listings',
      auth: 'key',
      summary:
        'List a vendor on the issuer-pays index for one year (vendor_listing_annual, an operator key); a vendor listed now is 409, a vendor the catalog ranks (its id, or its id as a word of the id or name) is 403; neither charges anything',
      tag: 'issuer_pays',
      role: 'operator',
      body: listingRequest,
      response: listingResponse,
      responses: { 201: { description: 'The vendor is listed for a year', schema: listingResponse } },
      problems: [403, 409],
      charges: [LISTING_SKU],
      chargeRules: { [LISTING_SKU]: { price: 'vendor_listing_annual' } },
      x402: false,
      example: { vendor: 'acme-audit', name: 'Acme Audit', url: 'https://acme-audit.example' },
      act: {},
    },
    async ({ input: b, key, event, bill }) => {
      const claim = claimedRankedVendor(b, RANKED);
      if (claim) {
        throw new Problem({
          status: 403,
          code: 'ranked_vendor_reserved',
          title: 'Forbidden',
          detail: `${claim.vendor} is a vendor the index ranks: its id and name stay the catalog's, and a listing may not take them (as its vendor id, or as a word of its id or name); nothing was charged`,
          extra: { ranked_vendor: claim.vendor, errors: [{ field: claim.field, message: `names the ranked vendor ${claim.vendor}` }] },
        });
      }
      const at = new Date();
      const listedAt = nowIso(at);
      const listedUntil = new Date(at.getTime() + YEAR_MS).toISOString();
      const line = { keyId: key.id, ...bill(LISTING_SKU) };
      return commitAct(event, ctx, key, {
        run: async (tx, state) => {
          const receipt = state.receipt(
            ctx,
            {
              kind: 'issuer_listing',
              decision: 'LISTED',
              subject: b.vendor,
              key_id: key.id,
              data: { name: b.name, ...(b.url ? { url: b.url } : {}), listed_until: listedUntil },
            },
            { charges: [line] },
          );
          const held = await activeListing(tx, b.vendor, listedAt);
          if (held)
            throw new Problem({
              status: 409,
              code: 'vendor_listed',
              title: 'Conflict',
              detail: `vendor ${b.vendor} is listed until ${held.listedUntil}; nothing was charged`,
              extra: { listed_until: held.listedUntil },
            });
          await insertListing(tx, {
            vendor: b.vendor,
            accountId: ownerId(key),
            name: b.name,
            url: b.url ?? null,
            listedAt,
            listedUntil,
            receiptId: receipt.receipt_id,
          });
          return {
            writes: { receipt },
            reply: reply(
              {
                object: 'issuer_listing',
                vendor: b.vendor,
                name: b.name,
                url: b.url ?? null,
                listed_at: listedAt,
                listed_until: listedUntil,
                grade: null,
                charge: chargeView(line),
                receipt_id: receipt.receipt_id,
                verify_url: receipt.verify_url,
              },
              201,
            ),
          };
        },
      });
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/api/v1/issuer-pays/listings',
      summary: 'The vendors listed on the issuer-pays index now',
      auth: 'public',
      tag: 'issuer_pays',
    },
    async () => {
      const rows = await activeListings(ctx.ledger.read, nowIso());
      return toResponse(
        reply({
          object: 'list',
          data: rows.map((l) => ({
            vendor: l.vendor,
            name: l.name,
            url: l.url,
            listed_at: l.listedAt,
            listed_until: l.listedUntil,
            receipt_id: l.receiptId,
          })),
        }),
        { 'access-control-allow-origin': '*', 'cache-control': 'no-cache' },
      );
    },
  );
}

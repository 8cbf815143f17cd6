/**
 * Every published price is either charged by an operation (its endpoint) or
 * marked as sold by contact, with the contact (SALES_CONTACT): in
 * GET /api/v1/pricing, on the price's own page, and in the diligence offer.
 * The amounts stay SPEC's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type J = Record<string, any>;
const CONTACT = 'deals@fusegate.test';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ SALES_CONTACT: CONTACT });
});
afterAll(() => s?.stop());

const rowsOf = (p: J): J[] => p.sections.flatMap((x: J) => x.rows);

/** SPEC's amounts of what is sold by contact (SPEC 2.4, 4.1), by row id of the price list. */
const BY_CONTACT: Record<string, string> = {
  diligence: '2500.00',
  bind_room_deposit: '1750.00',
  signal_platform: '125000.00',
  wholesale_monitor_monthly: '199.00',
  wholesale_sprint: '4500.00',
  wholesale_exhibit_d: '9000.00',
  wholesale_5pack: '18000.00',
  wholesale_twin: '11000.00',
  issuer_pays_carrier_data_seat_annual: '2500.00',
  issuer_pays_independence_audit_sprint: '8500.00',
  issuer_pays_score_refresh_rush: '1500.00',
};

describe('what nothing sells through the API is marked sold by contact', () => {
  it('GET /api/v1/pricing marks each, at its SPEC amount, with the configured contact and why', async () => {
    const rows = rowsOf(await (await s.fetch('/api/v1/pricing')).json());
    for (const [id, amount] of Object.entries(BY_CONTACT)) {
      const row = rows.find((r) => r.id === id)!;
      expect(row, id).toMatchObject({
        amount_usd: amount,
        sold_by: { by: 'contact', contact: CONTACT, why: expect.stringMatching(/.{30,}/) },
      });
      expect(row.endpoint, id).toBeUndefined();
    }
  });

  it('every other price names the operation that charges it, or says whose price it is', async () => {
    const rows = rowsOf(await (await s.fetch('/api/v1/pricing')).json());
    const unsold = rows.filter((r) => r.amount_usd !== undefined && !r.endpoint && !r.sold_by);
    // The PDTR catalog's listed toll is not a price of this service: what a bind costs is pdtr_bind.
    expect(unsold.map((r) => r.id)).toEqual(['pdtr_catalog_toll']);
    expect(unsold[0]!.note).toMatch(/Not what a bind is charged/);
    // A relay partner's retail band is the partner's own price.
    for (const id of ['retail_monitor', 'retail_sprint'])
      expect(rows.find((r) => r.id === id)!.sold_by, id).toMatchObject({ by: 'partner' });
    for (const id of [
      'vendor_listing_annual',
      'issuer_pays_vendor_listing_annual',
      'clearing_annual',
      'clearing_quarterly',
      'signal_mandate_overage',
    ]) {
      const row = rows.find((r) => r.id === id);
      if (row) expect(row.endpoint, id).toMatch(/^POST \//);
    }
  });

  it('the pages of those prices say so and link the contact (the build placeholder replaced)', async () => {
    for (const path of ['/diligence', '/bind-room', '/pricing', '/stack/signal', '/stack/issuer-pays', '/stack/relay']) {
      const html = await (await s.fetch(path)).text();
      expect(html, path).toContain('Sold by contact');
      expect(html, path).toMatch(new RegExp(`<a href="mailto:${CONTACT}"[^>]*>${CONTACT}</a>`));
      expect(html, path).not.toMatch(/fusegate-build\.invalid/);
    }
  });

  it('the diligence offer, as JSON and as text, names the contact', async () => {
    const offer = (await (await s.fetch('/diligence/offer.json')).json()) as J;
    expect(offer).toMatchObject({ price_usd: 2500, bind_room_deposit_usd: 1750, sold_by: 'contact', contact: CONTACT });
    expect(await (await s.fetch('/diligence/one-pager.txt')).text()).toContain(`sold by contact: write to ${CONTACT}`);
  });
});

describe('SALES_CONTACT', () => {
  it('defaults to sales@ the companion site host', async () => {
    const plain = await startTestServer({ SITE_URL: 'https://catalog.fusegate.test' });
    try {
      const rows = rowsOf(await (await plain.fetch('/api/v1/pricing')).json());
      expect(rows.find((r) => r.id === 'diligence')!.sold_by.contact).toBe('sales@catalog.fusegate.test');
    } finally {
      await plain.stop();
    }
  });

  it('must be an email address: anything else stops start-up naming it', () => {
    expect(() => loadConfig({ SALES_CONTACT: 'call us' })).toThrow(/SALES_CONTACT/);
  });
});

/**
 * Charges are declaration data (src/api/charges.ts): a route bills only the
 * SKUs it declares, each at its toll from src/content/tolls.json unless its
 * declaration names the rule that prices it (src/domain/charge-rules.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billOf } from '../src/api/charges.ts';
import type { RouteDoc } from '../src/api/router.ts';
import { TOLLS, tollMicros } from '../src/catalog/tolls.ts';
import { AMOUNT_RULES, CATALOG_PRICES } from '../src/domain/charge-rules.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import type { BpsTier } from '../src/domain/bps-tiers.ts';
import { fireFee } from '../src/domain/trigger.ts';

const tiers: BpsTier[] = [
  { id: 't1', cleared_usd_monthly_up_to: 1000, bps: 10 },
  { id: 't2', cleared_usd_monthly_up_to: null, bps: 5 },
];

describe('billing from the declaration', () => {
  it('a declared SKU costs its toll, a refusal hold is a NAP line, and the same line is reused', () => {
    const bill = billOf('POST /x', ['execute_gate', 'hold', 'seal']);
    expect(bill('execute_gate')).toEqual({ sku: 'execute_gate', amountMicros: tollMicros('execute_gate'), nap: false });
    expect(bill('hold')).toEqual({ sku: 'hold', amountMicros: tollMicros('hold'), nap: true });
    expect(bill('seal')).toBe(bill('seal'));
  });

  it('a SKU the declaration does not charge cannot be billed', () => {
    expect(() => billOf('POST /x', ['classify'])('seal')).toThrow(/does not charge/);
  });

  it('a SKU priced by a named rule is billed through it with its input; the rule must exist and be for a charged SKU', () => {
    const bill = billOf('POST /fire', ['bps_fire', 'bps_fee'], { bps_fee: { amount: 'trigger_fire_fee' } });
    const input = { exposureMicros: 2_000_000_000n, feeBps: 25, tiers, monthBeforeMicros: 0n };
    expect(bill('bps_fee', input)).toEqual({
      sku: 'bps_fee',
      amountMicros: Number(fireFee(input.exposureMicros, 25, tiers, 0n).feeMicros),
      nap: false,
    });
    expect(bill('bps_fee', input).amountMicros).toBe(5_000_000);
    // Without the template's own bps, the month's fires so far pick the marginal tier.
    const tiered = { ...input, feeBps: null, monthBeforeMicros: 999_000_000n };
    expect(bill('bps_fee', tiered).amountMicros).toBe(
      Number(fireFee(tiered.exposureMicros, null, tiers, tiered.monthBeforeMicros).feeMicros),
    );
    expect(() => bill('bps_fee')).toThrow(/needs its input/);
    expect(() => billOf('POST /y', ['bps_fee'], { bps_fee: { amount: 'no_such_rule' as never } })).toThrow(/no known amount rule/);
    expect(() => billOf('POST /y', ['classify'], { bps_fee: { amount: 'trigger_fire_fee' } })).toThrow(/does not charge/);
  });

  it('a declared SKU with neither a toll nor a rule fails when billed, naming what to declare', () => {
    expect(() => billOf('POST /z', ['widget_42'])('widget_42')).toThrow(/declare its amount rule/);
  });
});

describe('every metered declaration prices what it charges, and charges only that', { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  }, 60_000);
  afterAll(() => s?.stop());

  const metered = () => s.app.router.routes.filter((r) => (r.doc?.charges?.length ?? 0) > 0);

  it('each declared SKU costs its toll or a named rule that exists (an amount rule, a catalog price), and bills a whole amount', () => {
    const routes = metered();
    expect(routes.length).toBeGreaterThan(35);
    const hasToll = (sku: string) => TOLLS.some((t) => t.sku === sku);
    for (const r of routes) {
      const name = `${r.method} ${r.path}`;
      const doc = r.doc!;
      const bill = billOf(name, doc.charges, doc.chargeRules);
      for (const sku of doc.charges!) {
        const rule = doc.chargeRules?.[sku];
        if (rule?.amount !== undefined) {
          expect(Object.keys(AMOUNT_RULES), `${name} ${sku}`).toContain(rule.amount);
          continue;
        }
        if (rule?.price !== undefined) expect(Object.keys(CATALOG_PRICES), `${name} ${sku}`).toContain(rule.price);
        else expect(hasToll(sku), `${name} charges ${sku}, which has neither a toll nor a rule`).toBe(true);
        const line = bill(sku);
        expect(Number.isSafeInteger(line.amountMicros) && line.amountMicros > 0, `${name} ${sku}`).toBe(true);
        expect(line.amountMicros, `${name} ${sku}`).toBe(rule?.price ? Number(CATALOG_PRICES[rule.price](sku)) : tollMicros(sku));
      }
    }
  });

  it('called once on the real server, each metered operation charges only SKUs its declaration states (and never fails billing)', async () => {
    const key = await s.newKey('walk');
    const fuse = ((await (await s.fetch('/v1/fuses', { key: key.secret, json: {} })).json()) as { fuse_id: string }).fuse_id;
    // The examples name a placeholder fuse (one of the caller's own): use the walker's.
    const example = (doc: RouteDoc) =>
      JSON.parse(JSON.stringify(doc.example ?? {}).replaceAll('fuse_7Jm2kQv9XrT4pLw8Ns3bYd', fuse)) as unknown;
    const charged = new Set<string>();
    for (const r of metered()) {
      const name = `${r.method} ${r.path}`;
      if (r.path.includes(':')) continue;
      const doc = r.doc!;
      const res = await s.fetch(r.path, r.method === 'GET' ? { key: key.secret } : { key: key.secret, json: example(doc) });
      // A SKU billed outside the declaration throws: a 500. (A 503 is a feature this gate has not configured.)
      expect(res.status, name).not.toBe(500);
      const body = (await res.json().catch(() => ({}))) as { receipt_id?: string; witness_id?: string };
      const id = body.receipt_id ?? body.witness_id;
      if (!id || res.status >= 400) continue;
      const rc = (await (await s.fetch(`/v1/receipts/${id}`, { headers: { accept: 'application/json' } })).json()) as {
        payload?: { charges?: Array<{ sku: string }> };
        charges?: Array<{ sku: string }>;
      };
      const lines = rc.payload?.charges ?? rc.charges ?? [];
      for (const l of lines) expect(doc.charges, `${name} charged ${l.sku}`).toContain(l.sku);
      if (lines.length) charged.add(name);
    }
    // Enough of them acted on their examples for the walk to mean something.
    expect(charged.size).toBeGreaterThan(15);
  });
});

/**
 * Charges are declaration data (src/api/charges.ts): a route bills only the
 * SKUs it declares, each at its toll from src/content/tolls.json unless its
 * declaration names the rule that prices it (src/domain/charge-rules.ts).
 */
import { describe, expect, it } from 'vitest';
import { billOf } from '../src/api/charges.ts';
import { tollMicros } from '../src/catalog/tolls.ts';
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
    expect(bill('bps_fee', input)).toEqual({ sku: 'bps_fee', amountMicros: Number(fireFee(input.exposureMicros, 25, tiers, 0n).feeMicros), nap: false });
    expect(bill('bps_fee', input).amountMicros).toBe(5_000_000);
    // Without the template's own bps, the month's fires so far pick the marginal tier.
    const tiered = { ...input, feeBps: null, monthBeforeMicros: 999_000_000n };
    expect(bill('bps_fee', tiered).amountMicros).toBe(Number(fireFee(tiered.exposureMicros, null, tiers, tiered.monthBeforeMicros).feeMicros));
    expect(() => bill('bps_fee')).toThrow(/needs its input/);
    expect(() => billOf('POST /y', ['bps_fee'], { bps_fee: { amount: 'no_such_rule' as never } })).toThrow(/no known amount rule/);
    expect(() => billOf('POST /y', ['classify'], { bps_fee: { amount: 'trigger_fire_fee' } })).toThrow(/does not charge/);
  });

  it('a declared SKU with neither a toll nor a rule fails when billed, naming what to declare', () => {
    expect(() => billOf('POST /z', ['widget_42'])('widget_42')).toThrow(/declare its amount rule/);
  });
});

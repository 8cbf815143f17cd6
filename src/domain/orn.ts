/**
 * ORN (SPEC 2.4): SHARP slices and General Average declarations. Pure: no I/O.
 *
 * General Average: a loss incurred for the common good of a graph of parties
 * is borne pro rata to the value each contributed. Allocations are exact in
 * whole cents: each party gets floor(loss x value / total) cents, and the
 * cents left over go one each to the largest remainders (ties: request
 * order), so the allocations always add up to the loss (itself rounded to
 * the cent).
 */
import { formatUsd, MICROS_PER_CENT, roundToCent } from '../catalog/money.ts';
import { GA_DECLARE_TOLL_MICROS, SHARP_TOLL_MICROS } from './scale.ts';

export { GA_DECLARE_TOLL_MICROS, SHARP_TOLL_MICROS };

export interface Party {
  party_id: string;
  value_micros: bigint;
}

export interface Allocation {
  party_id: string;
  contributed_value_usd: string;
  /** Share of the contributed total, percent, 4 decimals (rounded half up). */
  share_pct: string;
  allocation_usd: string;
  allocation_micros: bigint;
}

export function allocateGeneralAverage(lossMicros: bigint, parties: readonly Party[]): Allocation[] {
  const total = parties.reduce((a, p) => a + p.value_micros, 0n);
  if (total <= 0n) throw new RangeError('the contributed values add up to zero');
  const lossCents = roundToCent(lossMicros) / MICROS_PER_CENT;
  const base = parties.map((p) => (lossCents * p.value_micros) / total);
  const rem = parties.map((p, i) => ({ i, r: (lossCents * p.value_micros) % total }));
  let left = lossCents - base.reduce((a, b) => a + b, 0n);
  rem.sort((a, b) => (b.r > a.r ? 1 : b.r < a.r ? -1 : a.i - b.i));
  for (const { i } of rem) {
    if (left === 0n) break;
    base[i]! += 1n;
    left -= 1n;
  }
  return parties.map((p, i) => {
    const pct = (p.value_micros * 1_000_000n * 2n + total) / (2n * total); // percent x 10^4, half up
    return {
      party_id: p.party_id,
      contributed_value_usd: formatUsd(p.value_micros),
      share_pct: `${pct / 10_000n}.${(pct % 10_000n).toString().padStart(4, '0')}`,
      allocation_usd: formatUsd(base[i]! * MICROS_PER_CENT),
      allocation_micros: base[i]! * MICROS_PER_CENT,
    };
  });
}

/** The pro rata allocation export: CSV (RFC 4180), one line per party. */
export function allocationCsv(rows: readonly Allocation[]): string {
  const q = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  return (
    [
      'party_id,contributed_value_usd,share_pct,allocation_usd',
      ...rows.map((r) => [q(r.party_id), r.contributed_value_usd, r.share_pct, r.allocation_usd].join(',')),
    ].join('\r\n') + '\r\n'
  );
}

/** SHARP: agents_in_graph x SHARP toll x orchestration events, micro-USD. */
export function sharpMicros(agents: number, events: number): bigint {
  return BigInt(agents) * BigInt(events) * BigInt(SHARP_TOLL_MICROS);
}

/**
 * Scale projections of the layer catalogs (SPEC 1: "Scale examples in the
 * catalogs are illustrative projections and carry no contract"). Each one is
 * units x tolls, the tolls read from the content data; the unit counts are the
 * caller's (or our default example's). Pure: no I/O; all money in micro-USD.
 */
import { DATA } from '../catalog/catalogs.ts';
import { tollMicros } from '../catalog/tolls.ts';
import { formatUsd, usdToMicros } from '../catalog/money.ts';

export interface ProjectionLine {
  /** What is metered, e.g. "refusals x hold". */
  line: string;
  units: number;
  toll_usd: string;
  monthly_usd: string;
}

export interface Projection {
  layer: string;
  illustrative: true;
  note: string;
  inputs: Record<string, number>;
  lines: ProjectionLine[];
  monthly_usd: string;
  annual_usd: string;
}

export function line(name: string, units: bigint, tollMicrosEach: bigint): { l: ProjectionLine; micros: bigint } {
  const micros = units * tollMicrosEach;
  return { l: { line: name, units: Number(units), toll_usd: formatUsd(tollMicrosEach), monthly_usd: formatUsd(micros) }, micros };
}

export function projection(
  layer: string,
  note: string,
  inputs: Record<string, number>,
  parts: Array<{ l: ProjectionLine; micros: bigint }>,
): Projection {
  const monthly = parts.reduce((a, p) => a + p.micros, 0n);
  return {
    layer,
    illustrative: true,
    note,
    inputs,
    lines: parts.map((p) => p.l),
    monthly_usd: formatUsd(monthly),
    annual_usd: formatUsd(monthly * 12n),
  };
}

const big = (n: number) => BigInt(n);

/** NAP: every act at the catalog's volume toll, plus the refused share at the NAP `hold` premium. */
export function napScale(i: { acts_per_month: number; refusal_rate_pct: number }): Projection {
  const acts = big(i.acts_per_month);
  // refusal_rate_pct has at most two decimals (schema); refusals rounded down.
  const refusals = (acts * big(Math.round(i.refusal_rate_pct * 100))) / 10_000n;
  const volumeToll = big(usdToMicros(DATA.nap.scale_example.volume_toll_usd));
  return projection('nap', DATA.nap.scale_example.note, i, [
    line('acts x volume toll', acts, volumeToll),
    line('refusals x hold (NAP)', refusals, big(tollMicros('hold'))),
  ]);
}

/** PDTR: payment bindings x pdtr_bind. */
export function pdtrScale(i: { bindings_per_month: number }): Projection {
  return projection('pdtr', DATA.pdtr.scale_example.note, i, [
    line('bindings x pdtr_bind', big(i.bindings_per_month), big(tollMicros('pdtr_bind'))),
  ]);
}

/** SHARP toll of one agent in one orchestration event, and the flat General Average declare toll (ORN catalog). */
export const SHARP_TOLL_MICROS = usdToMicros(DATA.orn.sharp_toll_usd);
export const GA_DECLARE_TOLL_MICROS = usdToMicros(DATA.orn.ga_declare_toll_usd);

/** ORN: agents_in_graph x SHARP toll x orchestration events, plus GA declares x flat toll. */
export function ornScale(i: { agents_in_graph: number; events_per_month: number; ga_declares_per_month: number }): Projection {
  return projection('orn', DATA.orn.scale_example.note, i, [
    line('agents_in_graph x orchestration events x SHARP', big(i.agents_in_graph) * big(i.events_per_month), big(SHARP_TOLL_MICROS)),
    line('GA declares x flat toll', big(i.ga_declares_per_month), big(GA_DECLARE_TOLL_MICROS)),
  ]);
}

/** RR-1: 428 challenges x the challenge toll. */
export function requireReceiptScale(i: { challenges_per_month: number }): Projection {
  return projection('require_receipt', DATA.require_receipt.scale_example.note, i, [
    line('challenges x challenge toll', big(i.challenges_per_month), big(usdToMicros(DATA.require_receipt.challenge_toll_usd))),
  ]);
}

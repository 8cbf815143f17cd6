/**
 * Oracle aggregation (SPEC 2.5, foundry layer 3): a weighted trimmed mean of
 * readings from the catalog's sources, with a DISPUTED guard. Pure; exact
 * (readings are decimal strings held as integers scaled by 10^6, weights as
 * integers scaled by 10^4; no float touches a value).
 *
 * Our rules (SPEC shows only "trimmed mean" and "DISPUTED guard"):
 *  1. each source at most once; fewer than `minSources` readings -> DISPUTED (too_few_sources);
 *  2. sort by value (ties by source_id); drop floor(n * trimPercent / 100) readings at EACH end;
 *  3. value = sum(w_i * v_i) / sum(w_i) over the kept readings, rounded half away from zero to 6 decimals;
 *  4. spread = max - min of the kept readings; spread * 10 000 > toleranceBps * |value| -> DISPUTED (spread).
 */
import { parseDecimal } from '../catalog/money.ts';

export const SCALE = 6;
const ONE = 10n ** BigInt(SCALE);

export class DecimalError extends Error {
  override name = 'DecimalError';
}

/** A signed decimal string ("-12.5") as an integer scaled by 10^6. */
export function parseSigned(text: string): bigint {
  const neg = text.startsWith('-');
  try {
    const v = parseDecimal(neg ? text.slice(1) : text, SCALE);
    return neg ? -v : v;
  } catch (e) {
    throw new DecimalError((e as Error).message);
  }
}

/** An integer scaled by 10^6 as the shortest decimal string: 102033333n -> "102.033333", 5000000n -> "5". */
export function formatSigned(v: bigint): string {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  const frac = (abs % ONE).toString().padStart(SCALE, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${abs / ONE}${frac ? '.' + frac : ''}`;
}

/** Integer division rounded half away from zero. */
export function divRound(n: bigint, d: bigint): bigint {
  const neg = n < 0n !== d < 0n;
  const an = n < 0n ? -n : n;
  const ad = d < 0n ? -d : d;
  const q = (an * 2n + ad) / (2n * ad);
  return neg ? -q : q;
}

export interface OracleSource {
  source_id: string;
  weight: number;
}

export interface Reading {
  source_id: string;
  value: string;
}

export interface OraclePolicy {
  minSources: number;
  trimPercent: number;
  toleranceBps: number;
}

export interface KeptReading {
  source_id: string;
  value: string;
  weight: number;
}

export type Aggregate = {
  sources: number;
  kept: KeptReading[];
  trimmed: Array<{ source_id: string; value: string }>;
  trim_per_side: number;
  policy: { min_sources: number; trim_percent: number; tolerance_bps: number };
} & (
  | { status: 'CONSENSUS'; value: string; spread: string }
  | { status: 'DISPUTED'; value: null; reason: 'too_few_sources' | 'spread'; spread: string | null }
);

/** Each source by id with its weight scaled by 10^4, made once per sources list (the catalog's lists never change). */
const sourceTables = new WeakMap<readonly OracleSource[], Map<string, OracleSource & { w: bigint }>>();

function sourceTable(sources: readonly OracleSource[]): Map<string, OracleSource & { w: bigint }> {
  let table = sourceTables.get(sources);
  if (!table) {
    table = new Map(sources.map((s) => [s.source_id, { ...s, w: parseDecimal(String(s.weight), 4) }]));
    sourceTables.set(sources, table);
  }
  return table;
}

/** Aggregates readings (already validated: known sources, no duplicates, decimal values). */
export function aggregate(readings: Reading[], sources: readonly OracleSource[], policy: OraclePolicy): Aggregate {
  const weightOf = sourceTable(sources);
  const pol = { min_sources: policy.minSources, trim_percent: policy.trimPercent, tolerance_bps: policy.toleranceBps };
  const sorted = readings
    .map((r) => ({ ...r, v: parseSigned(r.value), w: weightOf.get(r.source_id)!.w }))
    .sort((a, b) => (a.v < b.v ? -1 : a.v > b.v ? 1 : a.source_id < b.source_id ? -1 : 1));
  const n = sorted.length;
  const k = Math.floor((n * policy.trimPercent) / 100);
  const keptRows = n - 2 * k > 0 ? sorted.slice(k, n - k) : sorted;
  const trimmedRows = n - 2 * k > 0 ? [...sorted.slice(0, k), ...sorted.slice(n - k)] : [];
  const base = {
    sources: n,
    kept: keptRows.map((r) => ({ source_id: r.source_id, value: r.value, weight: weightOf.get(r.source_id)!.weight })),
    trimmed: trimmedRows.map((r) => ({ source_id: r.source_id, value: r.value })),
    trim_per_side: n - 2 * k > 0 ? k : 0,
    policy: pol,
  };
  if (n < policy.minSources || n === 0) return { ...base, status: 'DISPUTED', value: null, reason: 'too_few_sources', spread: null };
  const sumW = keptRows.reduce((a, r) => a + r.w, 0n);
  const mean = divRound(
    keptRows.reduce((a, r) => a + r.v * r.w, 0n),
    sumW,
  );
  const spread = keptRows[keptRows.length - 1]!.v - keptRows[0]!.v;
  const abs = mean < 0n ? -mean : mean;
  if (spread * 10_000n > BigInt(policy.toleranceBps) * abs) {
    return { ...base, status: 'DISPUTED', value: null, reason: 'spread', spread: formatSigned(spread) };
  }
  return { ...base, status: 'CONSENSUS', value: formatSigned(mean), spread: formatSigned(spread) };
}

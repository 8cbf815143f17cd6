/**
 * Exact sums of micro-USD columns. SQLite's SUM of INTEGER raises "integer
 * overflow" past 2^63, and the driver (intMode "number") refuses any integer
 * past 2^53. So a sum is taken in two parts, whole USD and the micro
 * remainders, each read back as text and recombined as a bigint: exact until
 * the whole-USD part itself passes 2^63 (9.2e18 USD, about a billion charges
 * at the largest single charge, MAX_CHARGE_MICROS).
 */
import type { Row } from '@libsql/client';
import { MICROS_PER_USD } from '../catalog/money.ts';

/** Select-list SQL for the exact sum of `column` as `<alias>_whole`, `<alias>_rem` (read it back with exactSum). */
export function exactSumSql(column: string, alias: string): string {
  return (
    `CAST(COALESCE(SUM(${column} / 1000000), 0) AS TEXT) AS ${alias}_whole, ` +
    `CAST(COALESCE(SUM(${column} % 1000000), 0) AS TEXT) AS ${alias}_rem`
  );
}

/** The bigint sum selected by exactSumSql(…, alias). */
export function exactSum(row: Row | undefined, alias: string): bigint {
  if (!row) return 0n;
  return BigInt(String(row[`${alias}_whole`] ?? '0')) * MICROS_PER_USD + BigInt(String(row[`${alias}_rem`] ?? '0'));
}

/*
 * Counters (usage_counters, clear_counters) keep an amount in two columns the
 * same way, `usd` (whole USD) and `micros` (the remainder, below a dollar).
 */

/** An amount as a counter stores it: [whole USD, micro-USD remainder]. */
export function toUsdMicros(micros: bigint): [bigint, bigint] {
  return [micros / MICROS_PER_USD, micros % MICROS_PER_USD];
}

/**
 * The SET of a counter's upsert that adds the new row's amount to the stored
 * one, carrying the remainders into whole USD (SET reads the row's old values
 * in every expression; the stored row's columns are named with the table's
 * name, which PostgreSQL requires).
 */
export function addUsdMicros(table: string): string {
  return `usd = ${table}.usd + excluded.usd + (${table}.micros + excluded.micros) / 1000000, micros = (${table}.micros + excluded.micros) % 1000000`;
}

/** Select-list SQL for the exact sum of a counter's amount as `usd`, `micros` (read it back with usdMicrosSum). */
export const SUM_USD_MICROS = 'CAST(COALESCE(SUM(usd), 0) AS TEXT) AS usd, CAST(COALESCE(SUM(micros), 0) AS TEXT) AS micros';

/** The bigint sum selected by SUM_USD_MICROS. */
export function usdMicrosSum(row: Row): bigint {
  return BigInt(String(row.usd)) * MICROS_PER_USD + BigInt(String(row.micros));
}

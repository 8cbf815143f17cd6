/**
 * Exact sums of micro-USD columns. SQLite's SUM of INTEGER raises "integer
 * overflow" past 2^63, and the driver (intMode "number") refuses any integer
 * past 2^53. So a sum is taken in two parts, whole USD and the micro
 * remainders, each read back as text and recombined as a bigint: exact until
 * the whole-USD part itself passes 2^63 (9.2e18 USD, about a billion charges
 * at the largest single charge, MAX_CHARGE_MICROS).
 */
import type { Row } from '@libsql/client';
import { MICROS_PER_USD } from '../domain/money.ts';

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

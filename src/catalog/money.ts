/**
 * Money: integer micro-USD (1 USD = 1 000 000). Decimal strings are parsed
 * exactly, never through a float; catalog numbers (JSON numbers such as 0.15)
 * are converted through their shortest decimal text, which is exact for every
 * amount with at most six decimals.
 */

export const MICROS_PER_USD = 1_000_000n;

/**
 * The largest single charge, in micro-USD: 9,000,000,000.00 USD, below 2^53 so
 * that one charge is exact even as a JS number. Every route bounds its inputs
 * (amounts at 9 integer digits, counts by their own limits) so that no charge
 * can pass it; totals are bigint and have no bound (see ledger/exact-sum.ts).
 */
export const MAX_CHARGE_MICROS = 9_000_000_000n * MICROS_PER_USD;

export class MoneyError extends Error {
  override name = 'MoneyError';
}

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** Parses a non-negative decimal string into integer units with `scale` decimals; throws on excess precision. */
export function parseDecimal(text: string, scale: number): bigint {
  const m = DECIMAL.exec(text.trim());
  if (!m) throw new MoneyError(`"${text}" is not a non-negative decimal number`);
  const [, whole, frac = ''] = m;
  if (frac.length > scale && /[1-9]/.test(frac.slice(scale))) {
    throw new MoneyError(`"${text}" has more than ${scale} decimal places`);
  }
  // One BigInt from the digits themselves: whole digits, then exactly `scale` fraction digits.
  return BigInt(whole! + frac.slice(0, scale).padEnd(scale, '0'));
}

/** Decimal USD string (or catalog number) to micro-USD. */
export function usdToMicros(usd: string | number): number {
  const text = typeof usd === 'number' ? numberToDecimalText(usd) : usd;
  return Number(parseDecimal(text, 6));
}

function numberToDecimalText(n: number): string {
  if (!Number.isFinite(n) || n < 0) throw new MoneyError(`${n} is not a non-negative amount`);
  // toString may use exponent notation for tiny or huge numbers; toFixed(6) is exact for catalog values.
  const s = String(n);
  return /e/i.test(s) ? n.toFixed(6) : s;
}

export const MICROS_PER_CENT = 10_000n;

/** Micro-USD rounded half up to a whole cent: every amount charged is whole cents. */
export function roundToCent(micros: bigint): bigint {
  const neg = micros < 0n;
  const abs = neg ? -micros : micros;
  const cents = (abs + MICROS_PER_CENT / 2n) / MICROS_PER_CENT;
  return (neg ? -cents : cents) * MICROS_PER_CENT;
}

/**
 * The one money formatter: micro-USD to a decimal string with exactly two
 * decimals (150000 -> "0.15", 10000000 -> "10.00"), rounded half up to the
 * cent. Amounts charged are whole cents already (see roundToCent), so for
 * them the text is exact.
 */
export function formatUsd(micros: number | bigint): string {
  const v = roundToCent(BigInt(micros));
  const neg = v < 0n;
  const cents = (neg ? -v : v) / MICROS_PER_CENT;
  return `${neg ? '-' : ''}${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`;
}

/** Fee in micro-USD of `bps` basis points on an exposure in micro-USD, rounded half up to the cent. */
export function bpsFeeMicros(exposureMicros: bigint, bps: string | number): bigint {
  return feeFromBpsProducts([bpsProduct(exposureMicros, bps)]);
}

/** exposure (micro-USD) x bps x 10^4: the exact, unrounded numerator of a bps fee. */
export function bpsProduct(exposureMicros: bigint, bps: string | number): bigint {
  // bps may be fractional (0.5): scale by 10^4 to keep it integral.
  return exposureMicros * parseDecimal(typeof bps === 'number' ? numberToDecimalText(bps) : bps, 4);
}

/** The sum of several bps products as one fee in micro-USD, rounded half up to the cent once. */
export function feeFromBpsProducts(products: readonly bigint[]): bigint {
  const sum = products.reduce((a, b) => a + b, 0n);
  // product / (10^4 bps per unit x 10^4 scale) is micro-USD; / 10^4 more is cents.
  const perCent = 10_000n * 10_000n * MICROS_PER_CENT;
  return ((sum * 2n + perCent) / (2n * perCent)) * MICROS_PER_CENT;
}

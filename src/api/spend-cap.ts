/**
 * Spend caps over the API (docs/accounts.md#spend-caps): the decimal text a cap
 * is sent and shown as, and the 402 of an act that would pass a cap, naming the
 * cap, what was spent this month and how to raise it.
 */
import { z } from 'zod';
import { formatUsd, parseDecimal } from '../catalog/money.ts';
import { DASHBOARD_ACCOUNT_PATH, DASHBOARD_KEYS_PATH } from '../accounts/paths.ts';
import { monthOf, monthReset, type SpendCapReached } from '../ledger/spend-caps.ts';
import { Problem } from './problem.ts';

/** The largest cap: 1,000,000,000.00 USD a month, far below 2^53 micro-USD. */
const MAX_CAP_DIGITS = 10;

/** A cap as sent: a decimal USD string with at most two decimals ("250.00"), or null for no cap. */
export const spendCapUsd = z
  .string()
  .regex(new RegExp(`^\\d{1,${MAX_CAP_DIGITS}}(\\.\\d{1,2})?$`), 'a decimal USD amount with at most two decimals, e.g. "250.00"')
  .nullable()
  .describe('the most charged per UTC calendar month, decimal USD (e.g. "250.00"); null: no cap');

/** A cap as sent, in micro-USD (null: no cap). */
export const capMicros = (usd: string | null): bigint | null => (usd === null ? null : parseDecimal(usd, 6));

/** A stored cap as shown (null: no cap). */
export const capUsd = (micros: bigint | number | null | undefined): string | null => (micros == null ? null : formatUsd(micros));

/** How a cap is shown with its month: cap, spent, remaining (null when there is no cap). */
export function capView(cap: bigint | null | undefined, spent: bigint) {
  return {
    spend_cap_usd: capUsd(cap),
    spent_this_month_usd: formatUsd(spent),
    remaining_usd: cap == null ? null : formatUsd(spent >= cap ? 0n : cap - spent),
  };
}

export const capViewSchema = {
  spend_cap_usd: z.string().nullable().describe('the most charged per UTC calendar month (null: no cap)'),
  spent_this_month_usd: z.string().describe('charged since the first of this UTC month'),
  remaining_usd: z.string().nullable().describe('what the cap still allows this month (null: no cap)'),
};

export function spendCapProblem(e: SpendCapReached, now = new Date()): Problem {
  const cap = formatUsd(e.capMicros);
  const spent = formatUsd(e.spentMicros);
  const raise =
    e.scope === 'key'
      ? {
          how_to_raise: `an operator of the account raises or removes the key's cap on the dashboard (${DASHBOARD_KEYS_PATH}/${e.keyId}) or with an operator key: POST /v1/keys/${e.keyId}/spend-cap {"spend_cap_usd": "…" | null}`,
          dashboard_url: `${DASHBOARD_KEYS_PATH}/${e.keyId}`,
        }
      : {
          how_to_raise: `an operator of the account raises or removes the account's cap on the dashboard (${DASHBOARD_ACCOUNT_PATH}) or with an operator key: POST /v1/account/spend-cap {"spend_cap_usd": "…" | null}`,
          dashboard_url: DASHBOARD_ACCOUNT_PATH,
        };
  return new Problem({
    status: 402,
    code: 'spend_cap_reached',
    title: 'Payment required',
    detail: `${e.scope === 'key' ? `key ${e.keyId}` : `account ${e.ownerId}`} has spent ${spent} USD of its ${cap} USD spend cap this month; this act would charge ${formatUsd(e.chargeMicros)} USD more. Nothing was charged.`,
    extra: {
      scope: e.scope,
      key_id: e.keyId,
      ...(e.scope === 'account' ? { account_id: e.ownerId } : {}),
      spend_cap_usd: cap,
      spent_this_month_usd: spent,
      charge_usd: formatUsd(e.chargeMicros),
      month: monthOf(now).label,
      resets_at: monthReset(now),
      ...raise,
    },
  });
}

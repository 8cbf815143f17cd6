/**
 * The 402 of a key past its hop limit (SPEC 7), with when the count starts
 * again and how an operator raises it.
 */
import { isTestKey, type ApiKey } from '../ledger/api-keys.ts';
import { periodReset } from '../domain/quota.ts';
import { DASHBOARD_KEYS_PATH } from '../accounts/paths.ts';
import { Problem } from './problem.ts';

export function hopLimitProblem(key: Pick<ApiKey, 'id' | 'hop_limit' | 'hops_used' | 'hop_period' | 'mode'>): Problem {
  const resetsAt = periodReset(key.hop_period);
  const period = key.hop_period === 'none' ? '' : ` this ${key.hop_period} (the count starts again at ${resetsAt})`;
  return new Problem({
    status: 402,
    code: 'hop_limit_exceeded',
    title: 'Payment required',
    detail: `key ${key.id} has used its ${key.hop_limit} hops${period}; ${isTestKey(key) ? 'a test key never pays: x402 is for live keys (docs/test-mode.md)' : 'x402 payments are not configured on this service'}`,
    extra: {
      hop_limit: key.hop_limit,
      hops_used: key.hops_used,
      period: key.hop_period,
      resets_at: resetsAt,
      x402Version: 1,
      x402_configured: false,
      accepts: [],
      error: 'hop limit exceeded',
      how_to_raise: `an operator of the account raises the limit on the dashboard (${DASHBOARD_KEYS_PATH}) or with an operator key: POST /v1/keys/${key.id}/limit`,
      dashboard_url: DASHBOARD_KEYS_PATH,
    },
  });
}

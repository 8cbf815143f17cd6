/** The problems the ledger's refusals of an act answer, on every door of the act pipeline. */
import { HopLimitReached, KeyRevoked, ReceiptTooLarge } from '../ledger/acts.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import { SpendCapReached } from '../ledger/spend-caps.ts';
import { revokedKeyProblem } from './auth.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { Problem } from './problem.ts';
import { spendCapProblem } from './spend-cap.ts';

/** The problem a refusal of the ledger answers (the key's quota spent, a spend cap reached, the key revoked); any other error unchanged. */
export function actProblem(e: unknown, key: ApiKey | undefined): unknown {
  if (key && e instanceof HopLimitReached) return hopLimitProblem({ ...key, hop_limit: e.hopLimit, hops_used: e.hopLimit });
  if (key && e instanceof KeyRevoked) return revokedKeyProblem();
  if (e instanceof SpendCapReached) return spendCapProblem(e);
  if (e instanceof ReceiptTooLarge)
    return new Problem({
      status: 413,
      code: 'receipt_too_large',
      title: 'Content Too Large',
      detail: `${e.message}: send less data with this act`,
      extra: { receipt_bytes: e.bytes },
    });
  return e;
}

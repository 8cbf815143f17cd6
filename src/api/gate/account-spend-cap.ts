/**
 * The account's monthly spend cap (docs/accounts.md#spend-caps), for operator keys:
 *   GET  /v1/account/spend-cap   the cap, what every key of the account was charged this month, what is left
 *   POST /v1/account/spend-cap   {spend_cap_usd | null}: sets it (null: no cap)
 * A key's own cap is on its key (POST /v1/keys/{id}/spend-cap); an act must fit under both.
 * A test key reads the cap but may not set it: it bills nothing, and the cap is the live account's.
 */
import { z } from 'zod';
import { accountSpendCap, setAccountSpendCap } from '../../ledger/accounts.ts';
import { monthOf, monthReset, spentThisMonth } from '../../ledger/spend-caps.ts';
import type { AppContext } from '../context.ts';
import { notFound } from '../problem.ts';
import { reply } from '../reply.ts';
import type { Router } from '../router.ts';
import { capMicros, capView, capViewSchema, spendCapUsd } from '../spend-cap.ts';
import { operation } from '../operation.ts';
import { liveKeyOnly } from '../auth.ts';

const accountCapRequest = z.strictObject({ spend_cap_usd: spendCapUsd });

const accountCapResponse = z.object({
  object: z.literal('spend_cap'),
  account_id: z.string(),
  ...capViewSchema,
  month: z.string().describe('the UTC calendar month counted, YYYY-MM'),
  resets_at: z.string().describe('when the month ends and spending counts from zero again'),
});

/** The account's cap as the API shows it: cap, spent and remaining this month. */
export async function accountCapView(ctx: AppContext, accountId: string, now = new Date()) {
  const [cap, spent] = await Promise.all([
    accountSpendCap(ctx.ledger.read, accountId),
    spentThisMonth(ctx.ledger.read, { accountId }, now),
  ]);
  return {
    object: 'spend_cap' as const,
    account_id: accountId,
    ...capView(cap, spent),
    month: monthOf(now).label,
    resets_at: monthReset(now),
  };
}

export function registerAccountSpendCapRoutes(router: Router, ctx: AppContext): void {
  const doc = { auth: 'key', role: 'operator', tag: 'keys' } as const;
  operation(
    router,
    ctx,
    {
      method: 'GET',
      path: '/v1/account/spend-cap',
      ...doc,
      tool: 'account_spend_cap',
      summary: "The account's monthly spend cap, what its keys were charged this month and what is left",
      response: accountCapResponse,
      problems: [403],
    },
    async ({ key: caller }) => {
      return reply(await accountCapView(ctx, caller.account_id));
    },
  );

  operation(
    router,
    ctx,
    {
      method: 'POST',
      path: '/v1/account/spend-cap',
      audit: { action: 'account.spend_cap_changed', detail: (a) => ({ spend_cap_usd: a.spend_cap_usd ?? null }) },
      ...doc,
      tool: 'account_spend_cap_set',
      summary:
        "Set the most all the account's keys together may be charged per UTC calendar month (null: no cap); past it an act answers 402 spend_cap_reached",
      body: accountCapRequest,
      response: accountCapResponse,
      problems: [400, 403, 404],
      example: { spend_cap_usd: '1000.00' },
    },
    async ({ key: caller, input: b }) => {
      liveKeyOnly(caller, "the account's spend cap");
      const set = await ctx.ledger.write((tx) => setAccountSpendCap(tx, caller.account_id, capMicros(b.spend_cap_usd)));
      if (!set) throw notFound(`account ${caller.account_id} has no settings to change`, 'unknown_account');
      return reply(await accountCapView(ctx, caller.account_id));
    },
  );
}

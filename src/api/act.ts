/**
 * The act pipeline: how a route commits a governed or metered act.
 *
 * A route validates its input (readBody), then hands over what the act needs
 * read under the write lock and its pure decision; the pipeline does the rest:
 * the Idempotency-Key answer recorded in the same transaction, the group
 * commit with the acts queued beside it (ledger/acts.ts, a constant number of
 * statements per batch), and the ledger's refusals turned into problems.
 *
 * @example
 *   return commitAct(event, ctx, key, {
 *     decide: () => ({ writes: { receipt, charges: [{ keyId: key.id, sku, amountMicros }] }, reply: reply(body) }),
 *   });
 */
import type { H3Event } from 'h3';
import { HopLimitReached, KeyRevoked, type ActNeeds, type ActState, type ActWrites } from '../ledger/acts.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import { revokedKeyProblem } from './auth.ts';
import type { AppContext } from './context.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { answerOf, takeReservation } from './idempotency.ts';
import type { Reply } from './reply.ts';

export interface ActSpec {
  needs?: ActNeeds;
  /** Pure: decides from the state read under the write lock; throws a Problem to refuse (nothing is written). */
  decide(state: ActState): { writes: ActWrites; reply: Reply };
}

/** Commits the act and answers its reply; `key` is the caller's, for the problems of its quota and revocation. */
export async function commitAct(event: H3Event, ctx: AppContext, key: ApiKey | undefined, spec: ActSpec): Promise<Reply> {
  const reservation = key ? takeReservation(event) : undefined;
  try {
    return await ctx.ledger.act({
      needs: spec.needs ?? {},
      decide(state) {
        const { writes, reply } = spec.decide(state);
        return { result: reply, writes: reservation ? { ...writes, answer: answerOf(reservation, reply) } : writes };
      },
    });
  } catch (e) {
    if (key && e instanceof HopLimitReached) throw hopLimitProblem({ ...key, hop_limit: e.hopLimit, hops_used: e.hopLimit });
    if (key && e instanceof KeyRevoked) throw revokedKeyProblem();
    throw e;
  }
}

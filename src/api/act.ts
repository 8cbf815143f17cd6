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
 *   return commitAct(event, ctx, key, {
 *     run: async (tx) => {
 *       const index = await appendManifest(tx, leaf);   // the area's own rows, under the lock
 *       return { writes: { receipt, charges }, reply: reply({ index }) };
 *     },
 *   });
 */
import type { H3Event } from 'h3';
import { HopLimitReached, KeyRevoked, type ActNeeds, type ActState, type ActWrites } from '../ledger/acts.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import type { Transaction } from '../ledger/sql.ts';
import { revokedKeyProblem } from './auth.ts';
import type { AppContext } from './context.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { answerOf, answerRecorded, openReservation } from './idempotency.ts';
import type { Reply } from './reply.ts';

export interface Decision {
  writes: ActWrites;
  reply: Reply;
}

/**
 * What a route declares: the state it needs read under the write lock, and its
 * decision, pure (`decide`) or reading its area's own rows in the transaction
 * (`run`, see ledger/acts.ts). Either throws a Problem to refuse: nothing is written.
 */
export type ActSpec = { needs?: ActNeeds } & (
  | { decide(state: ActState): Decision; run?: undefined }
  | { run(tx: Transaction, state: ActState): Promise<Decision>; decide?: undefined }
);

/** Commits the act and answers its reply; `key` is the caller's, if any, for the problems of its quota and revocation. */
export async function commitAct(event: H3Event, ctx: AppContext, key: ApiKey | undefined, spec: ActSpec): Promise<Reply> {
  const reservation = openReservation(event);
  const decided = ({ writes, reply }: Decision) => ({ result: reply, writes: reservation ? { ...writes, answer: answerOf(reservation, reply) } : writes });
  const needs = spec.needs ?? {};
  let answer: Reply;
  try {
    answer = await ctx.ledger.act(
      spec.run ? { needs, run: async (tx, state) => decided(await spec.run(tx, state)) } : { needs, decide: (state) => decided(spec.decide(state)) },
    );
  } catch (e) {
    throw actProblem(e, key);
  }
  if (reservation) answerRecorded(event);
  return answer;
}

/** The problem a refusal of the ledger answers (the key's quota spent, the key revoked); any other error unchanged. */
export function actProblem(e: unknown, key: ApiKey | undefined): unknown {
  if (key && e instanceof HopLimitReached) return hopLimitProblem({ ...key, hop_limit: e.hopLimit, hops_used: e.hopLimit });
  if (key && e instanceof KeyRevoked) return revokedKeyProblem();
  return e;
}

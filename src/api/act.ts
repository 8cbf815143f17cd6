/**
 * The act pipeline: how a route commits a governed or metered act.
 *
 * A keyed POST route declares itself with `keyedAct`: its doc (body schema,
 * role, charges) and its handler of the parsed body. The pipeline checks the
 * key, runs the request under its Idempotency-Key and reads the body with the
 * very schema the reference shows.
 *
 * A route validates its input (readBody), then hands over what the act needs
 * read under the write lock and its pure decision; the pipeline does the rest:
 * the Idempotency-Key answer recorded in the same transaction, the group
 * commit with the acts queued beside it (ledger/acts.ts, a constant number of
 * statements per batch), and the ledger's refusals turned into problems.
 *
 * @example
 *   keyedAct(router, ctx, '/api/v1/orn/sharp', { summary, tag: 'orn', body: sharpRequest, charges: ['orn_sharp'] }, async (b, key, event) =>
 *     commitAct(event, ctx, key, { decide: (state) => ({ writes: { receipt: state.receipt(ctx, input, { charges }) }, reply: reply(view(b)) }) }),
 *   );
 *   return commitAct(event, ctx, key, {
 *     run: async (tx, state) => {
 *       const receipt = state.receipt(ctx, input, { charges: [{ keyId: key.id, sku, amountMicros }] });   // minted under the lock
 *       const index = await appendManifest(tx, leaf, receipt.receipt_id);   // the area's own rows, under the lock
 *       return { writes: { receipt }, reply: reply({ index }) };
 *     },
 *   });
 */
import type { H3Event, HTTPResponse } from 'h3';
import type { z } from 'zod';
import { HopLimitReached, KeyRevoked, ReceiptTooLarge, type ActNeeds, type ActState, type ActWrites } from '../ledger/acts.ts';
import type { ApiKey } from '../ledger/api-keys.ts';
import type { Transaction } from '../ledger/sql.ts';
import { requireKey, revokedKeyProblem } from './auth.ts';
import { Problem } from './problem.ts';
import { readBody } from './body.ts';
import type { AppContext } from './context.ts';
import { hopLimitProblem } from './hop-limit.ts';
import { answerOf, answerRecorded, idempotent, openReservation } from './idempotency.ts';
import type { Reply } from './reply.ts';
import type { RouteDoc, Router } from './router.ts';

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
  if (e instanceof ReceiptTooLarge) return new Problem({ status: 413, code: 'receipt_too_large', title: 'Content Too Large', detail: `${e.message}: send less data with this act`, extra: { receipt_bytes: e.bytes } });
  return e;
}

/** What a keyed act route declares: its doc (the body schema is the one parsed), and what to do with its answer afterwards, if anything. */
export type KeyedActDoc<S extends z.ZodType> = Omit<RouteDoc, 'auth' | 'body'> & {
  body: S;
  /** Applied to the HTTP answer, the first one and a replay alike (e.g. a checkpoint's signed note). */
  after?: (res: HTTPResponse) => Promise<HTTPResponse>;
  /** Most bytes the body may have, for a route whose input is larger by nature (default MAX_BODY_BYTES). */
  bodyLimit?: number;
  /** Refuses before anything else, right after the key check (e.g. a feature this gate has not configured). */
  precondition?: () => void;
};

/**
 * Registers a keyed POST act: the key checked (401 before anything else), the
 * route's precondition, the request run under its Idempotency-Key, the body
 * read with `doc.body` (at most `doc.bodyLimit`, else MAX_BODY_BYTES), then
 * `handle`. The doc says `auth: 'key'` and names the body
 * schema it parses, so the reference cannot drift from the check; `doc.role`
 * is enforced by the router's guard before any of this.
 */
export function keyedAct<S extends z.ZodType>(
  router: Router,
  ctx: AppContext,
  path: string,
  doc: KeyedActDoc<S>,
  handle: (body: z.output<S>, key: ApiKey, event: H3Event) => Promise<Reply>,
): void {
  const { after, bodyLimit, precondition, summary, ...rest } = doc;
  const schema = doc.body;
  const limit = bodyLimit ?? ctx.config.MAX_BODY_BYTES;
  const act = async (event: H3Event): Promise<HTTPResponse> => {
    const key = await requireKey(event, ctx);
    precondition?.();
    return idempotent(event, ctx, key, async () => handle(await readBody(event, schema, limit), key, event));
  };
  router.post(path, after ? async (event) => after(await act(event)) : act, { summary, auth: 'key', ...rest });
}

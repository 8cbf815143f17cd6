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
 *     needs: { rows: [{ reader: TICKETS, key: b.ticket_id }] },                                   // read with the group's
 *     run: async (tx, state) => {
 *       const ticket = await state.row(TICKETS, b.ticket_id);
 *       const receipt = state.receipt(ctx, input, { charges: [{ keyId: key.id, sku, amountMicros }] });   // minted under the lock
 *       await claimTicket(tx, ticket);                                                                   // the area's own rows, under the lock
 *       return { writes: { receipt }, reply: reply({ ticket_id: ticket.id }) };
 *     },
 *   });
 */
import type { H3Event } from 'h3';
import type { HTTPResponse } from 'h3';
import type { z } from 'zod';
import { getApiKey, isTestKey, type ApiKey } from '../ledger/api-keys.ts';
import type { ActEvent } from './act-event.ts';
import { actProblem } from './act-problem.ts';
import type { ActSpec, Decision } from './act-spec.ts';
import { readBody, readQuery } from './body.ts';
import { billOf, type Bill } from './charges.ts';
import type { AppContext } from './context.ts';
import { answerOf, answerRecorded, idempotent, openReservation } from './idempotency.ts';
import { actLane } from './lane.ts';
import { commitPaidAct, hopLimitQuote, paidAct, paidCallOf, paidDoorOf, presentsPayment } from './paid-act.ts';
import { Problem } from './problem.ts';
import type { Reply } from './reply.ts';
import { actResponse } from './request-notes.ts';
import type { RouteDoc, Router } from './router.ts';

export type { ActSpec, Decision } from './act-spec.ts';
export { actProblem } from './act-problem.ts';

/** Commits the act and answers its reply; `key` is the caller's, if any, for the problems of its quota and revocation. */
export async function commitAct(event: ActEvent, ctx: AppContext, key: ApiKey | undefined, specOnly: ActSpec): Promise<Reply> {
  // What the act charges the key counts against its spend caps (ledger/spend-caps.ts); a test key's goes to the test log, unbilled.
  const spec: ActSpec = key
    ? { ...specOnly, needs: isTestKey(key) ? { ...specOnly.needs, test: true } : { ...specOnly.needs, spendOf: key.id } }
    : specOnly;
  const call = paidCallOf(event);
  if (call) return commitPaidAct(ctx, key, call, spec);
  const reservation = openReservation(event);
  const decided = ({ writes, reply }: Decision) => ({
    result: reply,
    writes: reservation ? { ...writes, answer: answerOf(reservation, reply) } : writes,
  });
  const needs = spec.needs ?? {};
  let answer: Reply;
  try {
    answer = await ctx.ledger.act(
      spec.run
        ? { needs, run: async (tx, state) => decided(await spec.run(tx, state)) }
        : { needs, decide: (state) => decided(spec.decide(state)) },
    );
  } catch (e) {
    throw actProblem(e, key);
  }
  if (reservation) answerRecorded(event);
  return answer;
}

declare module 'h3' {
  interface H3EventContext {
    /** The body a keyed act read, once per request (keyedAct). */
    keyedActBody?: Promise<unknown>;
  }
}

/** What a keyed act route declares: its doc (the body schema is the one parsed), and what to do with its answer afterwards, if anything. */
export type KeyedActDoc<S extends z.ZodType, P = undefined> = Omit<RouteDoc, 'auth' | 'body' | 'query'> & {
  /** The body schema; absent, the act takes no body and none is read. */
  body?: S;
  /**
   * A keyed read instead of a POST act (e.g. the lookup, which counts a hop): the operation is a GET
   * whose query is parsed with this schema and handed to the handler in place of a body; a read takes
   * no Idempotency-Key.
   */
  query?: S;
  /** A request without a Content-Type is read as `{}` (the schema's defaults), as when no body was sent. */
  optionalBody?: boolean;
  /** The body is read (and refused) before the Idempotency-Key is looked at. */
  bodyFirst?: boolean;
  /** Applied to the answer on every door, the first one and a replay alike (e.g. a checkpoint's signed note). */
  after?: (r: Reply) => Reply;
  /** Most bytes the body may have, for a route whose input is larger by nature (default MAX_BODY_BYTES). */
  bodyLimit?: number;
  /** Refuses before anything else, right after the key check (e.g. a feature this gate has not configured). */
  precondition?: () => void;
  /**
   * Checks what the path names before the Idempotency-Key (e.g. the caller's fuse: 404 first), after the
   * precondition; its result is handed to the handler. Keyed routes only: a keyless payer never reaches it.
   */
  precheck?: (event: H3Event, key: ApiKey) => Promise<P> | P;
  /**
   * Answer the plain keyed call (JSON body, cached key, no Idempotency-Key, no payment) from the
   * Node listener, before h3 (api/lane.ts). Only for a handler that reads nothing of its event but
   * `context`, on a route with a body and neither precheck nor optionalBody.
   */
  lane?: boolean;
};

/**
 * Registers a keyed POST act: the key checked (401 before anything else), the
 * route's precondition and precheck, the request run under its Idempotency-Key,
 * the body read with `doc.body` (at most `doc.bodyLimit`, else MAX_BODY_BYTES;
 * before the Idempotency-Key with `bodyFirst`; none without a schema), then
 * `handle`. With `doc.query` instead, a keyed GET: the query read with it
 * and handed to `handle`, no Idempotency-Key; key, x402 and bill as for a POST. The doc says `auth: 'key'` and names the body
 * schema it parses, so the reference cannot drift from the check; `doc.role`
 * is enforced by the router's guard before any of this.
 */
export function keyedAct<S extends z.ZodType = z.ZodUndefined, P = undefined>(
  router: Router,
  ctx: AppContext,
  path: string,
  doc: KeyedActDoc<S, P>,
  handleOnly: (body: z.output<S>, key: ApiKey, event: ActEvent, checked: P, bill: Bill) => Promise<Reply>,
): void {
  const { after, bodyLimit, precondition, precheck, optionalBody, bodyFirst, lane, summary, ...rest } = doc;
  const schema = doc.body ?? doc.query;
  const method = doc.query ? 'GET' : 'POST';
  if (doc.query && (doc.body || bodyFirst || optionalBody)) throw new Error(`${path}: a keyed read takes a query, not a body`);
  const limit = bodyLimit ?? ctx.config.MAX_BODY_BYTES;
  // The answer as every door sends it: the handler's, then the route's after step.
  const handle: typeof handleOnly = after ? async (...args) => after(await handleOnly(...args)) : handleOnly;
  const declared: RouteDoc = { summary, auth: 'key', ...rest };
  // What the act charges, priced from its declaration once (api/charges.ts).
  const bill = billOf(`${method} ${path}`, doc.charges, doc.chargeRules);
  const readOnce = async (event: H3Event): Promise<z.output<S>> => {
    if (!schema) return undefined as z.output<S>;
    if (doc.query) return readQuery(event, doc.query);
    if (optionalBody && event.req.headers.get('content-type') === null) return schema.parse({}) as z.output<S>;
    return readBody(event, schema, limit);
  };
  // Read once per request: a key past its hop limit is priced on the body its keyed attempt read.
  const read = (event: H3Event): Promise<z.output<S>> => (event.context.keyedActBody ??= readOnce(event)) as Promise<z.output<S>>;
  // x402 in place of a key, where the declaration takes it and the service has x402 configured.
  const door = paidDoorOf(ctx, method, path, declared);
  if (door && precheck) throw new Error(`${method} ${path}: a precheck needs the key, and this act takes x402 without one`);
  const pastHopLimit = door?.pastHopLimit === true;
  // The handler where no precheck runs first: a paid call, and the act lane.
  const unchecked = (b: z.output<S>, k: ApiKey, e: ActEvent) => handle(b, k, e, undefined as P, bill);
  const checkedFirst = async (event: H3Event, key: ApiKey): Promise<HTTPResponse> => {
    const checked = precheck ? await precheck(event, key) : (undefined as P);
    if (bodyFirst) {
      const body = await read(event);
      return idempotent(event, ctx, key, async () => handle(body, key, event, checked, bill), after);
    }
    return idempotent(event, ctx, key, async () => handle(await read(event), key, event, checked, bill), after);
  };
  // The key's act; a plain function, so that the common case (no precheck, body read under the key) costs no extra promise.
  const keyed = doc.query
    ? async (event: H3Event, key: ApiKey): Promise<HTTPResponse> => {
        const checked = precheck ? await precheck(event, key) : (undefined as P);
        return actResponse(event, await handle(await read(event), key, event, checked, bill));
      }
    : precheck || bodyFirst
      ? checkedFirst
      : (event: H3Event, key: ApiKey): Promise<HTTPResponse> =>
          idempotent(event, ctx, key, async () => unchecked(await read(event), key, event), after);
  if (lane) {
    // bodyFirst is moot there: the lane reads the body first, and takes no Idempotency-Key.
    if (!doc.body || doc.query || precheck || optionalBody || doc.role === 'operator')
      throw new Error(`${method} ${path}: a lane takes a plain keyed POST with a body`);
    // A key past its hop limit may pay here: that 402 carries the x402 requirements, which only the h3 route gives.
    if (!pastHopLimit) router.lane(path, actLane(ctx, { path, schema: doc.body, limit, precondition, handle: unchecked }));
  }
  const act = pastHopLimit
    ? async (event: H3Event): Promise<HTTPResponse | Response> => {
        const key = event.context.apiKey;
        precondition?.();
        const pay = { ctx, door: door!, body: async () => read(event), handle: unchecked };
        if (!key) return paidAct(event, pay);
        // A test key never pays: past its hop limit it is answered 402 with no x402 offer (docs/test-mode.md).
        if (isTestKey(key)) return keyed(event, key);
        if (presentsPayment(event)) {
          // The authenticated key may come from the auth cache, whose hops_used lags by up to AUTH_CACHE_MS:
          // whether a presented payment is taken must not lag, so the count is read afresh.
          const fresh = (await getApiKey(ctx.ledger.read, key.id)) ?? key;
          if (fresh.hops_used >= fresh.hop_limit) return paidAct(event, pay, fresh);
        }
        try {
          return await keyed(event, key);
        } catch (e) {
          if (e instanceof Problem && e.code === 'hop_limit_exceeded') return paidAct(event, pay, key, hopLimitQuote(e));
          throw e;
        }
      }
    : async (event: H3Event): Promise<HTTPResponse | Response> => {
        // The router's guard read the key, and required it unless a payment may stand in (auth.ts keyGuard).
        const key = event.context.apiKey;
        precondition?.();
        if (!key) return paidAct(event, { ctx, door: door!, body: async () => read(event), handle: unchecked });
        return keyed(event, key);
      };
  router.on(method, path, act, declared, { paidInPlaceOfKey: door !== undefined });
}

/**
 * The act pipeline: how a route commits a governed or metered act.
 *
 * An act is an operation declared with `act` (api/operation.ts): its doc
 * (body schema, role, charges) and its handler of a typed call. The pipeline
 * checks the key, runs the request under its Idempotency-Key and reads the
 * body with the very schema the reference shows.
 *
 * The handler hands over what the act needs read under the write lock and
 * its pure decision; the pipeline does the rest: the Idempotency-Key answer
 * recorded in the same transaction, the group commit with the acts queued
 * beside it (ledger/acts.ts, a constant number of statements per batch), and
 * the ledger's refusals turned into problems.
 *
 * @example
 *   operation(router, ctx, { method: 'POST', path: '/api/v1/orn/sharp', auth: 'key', summary, tag: 'orn', body: sharpRequest, charges: ['orn_sharp'], act: {} },
 *     async ({ input, key, event }) =>
 *       commitAct(event, ctx, key, { decide: (state) => ({ writes: { receipt: state.receipt(ctx, input, { charges }) }, reply: reply(view(input)) }) }),
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
import { inputReader } from './body.ts';
import { billOf } from './charges.ts';
import type { AppContext } from './context.ts';
import { NO_PARAMS, type ActOptions, type Call } from './declaration.ts';
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
    /** The body a keyed act read, once per request (actRoute). */
    keyedActBody?: Promise<unknown>;
  }
}

/** An act's declaration, as api/operation.ts hands it over: its doc, and how its input is read. */
export interface ActRoute<S extends z.ZodType, P> {
  method: 'GET' | 'POST';
  path: string;
  declared: RouteDoc;
  optionalBody?: boolean | undefined;
  bodyLimit?: number | undefined;
  precheck?: ((event: H3Event, key: ApiKey) => P | Promise<P>) | undefined;
  act: ActOptions;
}

/**
 * Registers a keyed act (api/operation.ts, a declaration with `act`): the key
 * checked by the router's guard (401 before anything else), the act's
 * precondition and the route's precheck, the request run under its
 * Idempotency-Key, the body read with the declared schema (at most
 * `bodyLimit`, else MAX_BODY_BYTES; before the Idempotency-Key with
 * `bodyFirst`; none without a schema), then `handleCall`. A GET act (a keyed
 * read that counts, e.g. the lookup) reads its query instead and takes no
 * Idempotency-Key; key, x402 and bill as for a POST.
 */
export function actRoute<S extends z.ZodType, P>(
  router: Router,
  ctx: AppContext,
  route: ActRoute<S, P>,
  handleCall: (call: Call<z.output<S>, ApiKey, P, ActEvent>) => Promise<Reply>,
): void {
  const { method, path, declared, optionalBody, bodyLimit, precheck } = route;
  const { after, precondition, bodyFirst, lane } = route.act;
  const schema = (declared.body ?? declared.query) as S | undefined;
  const isRead = method === 'GET';
  if (isRead && (bodyFirst || optionalBody)) throw new Error(`${path}: a keyed read takes a query, not a body`);
  const limit = bodyLimit ?? ctx.config.MAX_BODY_BYTES;
  // What the act charges, priced from its declaration once (api/charges.ts).
  const bill = billOf(`${method} ${path}`, declared.charges, declared.chargeRules);
  const handleOnly = (input: z.output<S>, key: ApiKey, event: ActEvent, checked: P): Promise<Reply> =>
    handleCall({
      input,
      key,
      params: event.context.params ?? NO_PARAMS,
      checked,
      bill,
      payment: paidCallOf(event)?.payment,
      requestId: event.context.requestId ?? '',
      event,
    });
  // The answer as every door sends it: the handler's, then the route's after step.
  const handle: typeof handleOnly = after ? async (...args) => after(await handleOnly(...args)) : handleOnly;
  const readOnce = inputReader(method, schema, limit, optionalBody);
  // Read once per request: a key past its hop limit is priced on the body its keyed attempt read.
  const read = (event: H3Event): Promise<z.output<S>> =>
    (event.context.keyedActBody ??= Promise.resolve(readOnce(event))) as Promise<z.output<S>>;
  // x402 in place of a key, where the declaration takes it and the service has x402 configured.
  const door = paidDoorOf(ctx, method, path, declared);
  if (door && precheck) throw new Error(`${method} ${path}: a precheck needs the key, and this act takes x402 without one`);
  const pastHopLimit = door?.pastHopLimit === true;
  // The handler where no precheck runs first: a paid call, and the act lane.
  const unchecked = (b: z.output<S>, k: ApiKey, e: ActEvent) => handle(b, k, e, undefined as P);
  const checkedFirst = async (event: H3Event, key: ApiKey): Promise<HTTPResponse> => {
    const checked = precheck ? await precheck(event, key) : (undefined as P);
    if (bodyFirst) {
      const body = await read(event);
      return idempotent(event, ctx, key, async () => handle(body, key, event, checked), after);
    }
    return idempotent(event, ctx, key, async () => handle(await read(event), key, event, checked), after);
  };
  // The key's act; a plain function, so that the common case (no precheck, body read under the key) costs no extra promise.
  const keyed = isRead
    ? async (event: H3Event, key: ApiKey): Promise<HTTPResponse> => {
        const checked = precheck ? await precheck(event, key) : (undefined as P);
        return actResponse(event, await handle(await read(event), key, event, checked));
      }
    : precheck || bodyFirst
      ? checkedFirst
      : (event: H3Event, key: ApiKey): Promise<HTTPResponse> =>
          idempotent(event, ctx, key, async () => unchecked(await read(event), key, event), after);
  if (lane) {
    // bodyFirst is moot there: the lane reads the body first, and takes no Idempotency-Key.
    if (!declared.body || isRead || precheck || optionalBody || declared.role === 'operator')
      throw new Error(`${method} ${path}: a lane takes a plain keyed POST with a body`);
    // A key past its hop limit may pay here: that 402 carries the x402 requirements, which only the h3 route gives.
    if (!pastHopLimit) router.lane(path, actLane(ctx, { path, schema: schema!, limit, precondition, handle: unchecked }));
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

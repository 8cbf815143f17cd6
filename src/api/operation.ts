/**
 * Declares an API operation, keyed or public, read or write, in the one form
 * every route module uses: its declaration (api/declaration.ts) and a handler
 * of a typed call.
 *
 * What the declaration says is enforced before the handler runs: the key and
 * role by the router's guard (api/auth.ts keyGuard), the precheck, the input
 * read with the declared schema (a 400 that names each field, a 413, a 415),
 * and for an act (`act`) the act pipeline (api/act.ts: Idempotency-Key, x402,
 * the lane). The handler answers a Reply (sent as JSON) or a whole HTTP answer.
 *
 * @example
 *   operation(router, ctx, { method: 'POST', path: '/v1/keys/:key_id/limit', auth: 'key', role: 'operator', tag: 'keys',
 *     summary: "Set a key's hop limit", body: limitRequest, precheck: accountKey },
 *     async ({ input, checked: key }) => reply(keyObject(await setHopLimit(ctx.ledger, key.id, input.hop_limit))));
 */
import { HTTPResponse, type H3Event } from 'h3';
import type { z } from 'zod';
import { actRoute } from './act.ts';
import { inputReader } from './body.ts';
import { billOf, type Bill } from './charges.ts';
import type { AppContext } from './context.ts';
import { NO_PARAMS, type ActOptions, type Answer, type Auth, type CallOf, type Declaration } from './declaration.ts';
import type { Reply } from './reply.ts';
import { actResponse } from './request-notes.ts';
import type { RouteDoc } from './route-doc.ts';
import type { Router } from './router.ts';

export type { Answer, Call, CallOf, Declaration } from './declaration.ts';

/** Declares an act (api/act.ts): keyed, run under its Idempotency-Key, x402 where its charges take it, and maybe on the lane. */
export function operation<S extends z.ZodType = z.ZodUndefined, P = undefined>(
  router: Router,
  ctx: AppContext,
  decl: Declaration<S, 'key', P, ActOptions> & { act: ActOptions },
  handle: (call: CallOf<S, 'key', P, ActOptions>) => Promise<Reply>,
): void;
/** Declares an operation that is not an act: a read, a public or demo call, a keyed change that charges nothing. */
export function operation<S extends z.ZodType = z.ZodUndefined, const A extends Auth = Auth, P = undefined>(
  router: Router,
  ctx: AppContext,
  decl: Declaration<S, A, P, undefined>,
  handle: (call: CallOf<S, A, P, undefined>) => Promise<Answer> | Answer,
): void;
export function operation<S extends z.ZodType, P>(
  router: Router,
  ctx: AppContext,
  decl: Omit<Declaration<S, Auth, P, ActOptions | undefined>, 'precheck'> & { precheck?: (event: H3Event, key: never) => P | Promise<P> },
  handle: (call: never) => Promise<Answer> | Answer,
): void {
  const { method, path, optionalBody, bodyLimit, precheck, act, ...doc } = decl;
  if (method === 'GET' ? decl.body : decl.query)
    throw new Error(`${method} ${path}: a ${method} reads its input from the ${method === 'GET' ? 'query' : 'body'}`);
  const declared = doc as RouteDoc;
  if (act) {
    if (decl.auth !== 'key') throw new Error(`${method} ${path}: an act is keyed`);
    actRoute(router, ctx, { method, path, declared, optionalBody, bodyLimit, precheck: precheck as never, act }, handle as never);
    return;
  }
  const bill: Bill = billOf(`${method} ${path}`, doc.charges, doc.chargeRules);
  const read = inputReader(method, decl.body ?? decl.query, bodyLimit ?? ctx.config.MAX_BODY_BYTES, optionalBody);
  router.on(
    method,
    path,
    async (event) => {
      const key = event.context.apiKey;
      const checked = precheck ? await precheck(event, key as never) : (undefined as P);
      const input = await read(event);
      const params = event.context.params ?? NO_PARAMS;
      const requestId = event.context.requestId ?? '';
      return sent(event, await handle({ input, key, params, checked, bill, payment: undefined, requestId, event } as never));
    },
    declared,
  );
}

/** A handler's answer as h3 sends it: a Reply as JSON with its receipt noted, anything else as it is. */
function sent(event: H3Event, answer: Answer): HTTPResponse | Response {
  return answer instanceof HTTPResponse || answer instanceof Response ? answer : actResponse(event, answer as Reply);
}

/**
 * Bearer authentication (SPEC part 5): `Authorization: Bearer <key>`.
 * Missing, unknown, revoked or expired keys get 401 with `WWW-Authenticate: Bearer`.
 */
import type { IncomingMessage } from 'node:http';
import type { H3Event } from 'h3';
import { authenticateSecret, cachedSecret, isExpired, isTestKey, touchKey, type ApiKey } from '../ledger/api-keys.ts';
import { cacheNow, type AppContext } from './context.ts';
import { Problem } from './problem.ts';
import { x402Configured } from '../payments/x402/settings.ts';
import { nodeRequestOf, noteKey } from './request-notes.ts';
import type { RouteDoc, RouteRecord } from './route-doc.ts';

/** Whether the request carries an x402 payment header (v2 PAYMENT-SIGNATURE or v1 X-PAYMENT). */
const presentsPayment = (event: H3Event): boolean =>
  event.req.headers.get('payment-signature') !== null || event.req.headers.get('x-payment') !== null;

declare module 'h3' {
  interface H3EventContext {
    /** The calling key, once authenticated (optionalKey); present and undefined when the request sent none. */
    apiKey?: ApiKey | undefined;
    /** The request's id (x-request-id), set by the app for every request. */
    requestId?: string;
  }
}

const REALM = 'Bearer realm="fusegate"';

/** Where a caller without a working key gets one: said in every 401 (issue 31). */
export const GET_A_KEY = 'create an account at /signup (or sign in at /signin) and make a key on /dashboard/keys';

function unauthorized(code: string, detail: string, error: string): Problem {
  return new Problem({
    status: 401,
    code,
    title: 'Unauthorized',
    detail,
    headers: { 'www-authenticate': `${REALM}, error="${error}"` },
    extra: { signup_url: '/signup' },
  });
}

export const revokedKeyProblem = () => unauthorized('revoked_key', 'the API key has been revoked', 'invalid_token');

const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i;

/** The bearer token of the request, or undefined when there is none. */
export function bearerToken(event: H3Event): string | undefined {
  const header = event.req.headers.get('authorization');
  if (!header) return undefined;
  const m = BEARER.exec(header);
  if (!m) throw unauthorized('malformed_authorization', 'the Authorization header must be "Bearer <key>"', 'invalid_request');
  return m[1];
}

/**
 * For answers given before h3 (router.readyAnswer): the calling key when the
 * Authorization header names a key the auth cache holds fresh and it is
 * neither revoked nor expired (then it is touched, as optionalKey does), else
 * undefined, and the request goes through h3 and optionalKey, which answers
 * every other case (no header, malformed, unknown, revoked, expired, not cached).
 */
export function readyKey(req: IncomingMessage, ctx: AppContext): ApiKey | undefined {
  // Node keeps the first of repeated Authorization headers, h3 sees them joined (malformed): leave those to h3.
  let authorization: string | undefined;
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() !== 'authorization') continue;
    if (authorization !== undefined) return undefined;
    authorization = req.rawHeaders[i + 1];
  }
  const m = authorization ? BEARER.exec(authorization) : null;
  if (!m || !(ctx.config.AUTH_CACHE_MS > 0)) return undefined;
  const key = cachedSecret(ctx.ledger.read, m[1]!, cacheNow(ctx))?.key;
  if (!key || key.revoked_at || isExpired(key)) return undefined;
  touchKey(ctx.ledger, key);
  noteKey(req, key);
  return key;
}

/** The calling key, or undefined when the request carries none. Throws 401 for a bad key. */
export async function optionalKey(event: H3Event, ctx: AppContext): Promise<ApiKey | undefined> {
  if ('apiKey' in event.context) return event.context.apiKey;
  const token = bearerToken(event);
  let key: ApiKey | undefined;
  if (token !== undefined) {
    key = await authenticateSecret(ctx.ledger.read, token, ctx.config.AUTH_CACHE_MS, cacheNow(ctx));
    if (!key) throw unauthorized('unknown_key', `the API key is not known: ${GET_A_KEY}`, 'invalid_token');
    // A revoked or expired key is still its account's: its refusals are in the account's request log.
    noteKey(nodeRequestOf(event), key);
    if (key.revoked_at) throw revokedKeyProblem();
    if (isExpired(key)) throw unauthorized('expired_key', `the API key expired at ${key.expires_at}`, 'invalid_token');
    touchKey(ctx.ledger, key);
  }
  event.context.apiKey = key;
  return key;
}

/** The calling key; 401 when the request carries none. */
export async function requireKey(event: H3Event, ctx: AppContext): Promise<ApiKey> {
  const key = await optionalKey(event, ctx);
  if (!key && presentsPayment(event)) {
    // A payment without a key: this operation (or this service) takes none.
    const on = x402Configured(ctx.config);
    throw new Problem({
      status: 401,
      code: on ? 'x402_not_accepted' : 'x402_not_configured',
      title: 'Unauthorized',
      detail: `${on ? 'this operation takes no x402 payment' : 'x402 payments are not configured on this service'}; send an API key ("Authorization: Bearer <key>")`,
      headers: { 'www-authenticate': REALM },
    });
  }
  if (!key) {
    throw new Problem({
      status: 401,
      code: 'missing_key',
      title: 'Unauthorized',
      detail: `this operation needs an API key: send "Authorization: Bearer <key>"; to get one, ${GET_A_KEY}`,
      headers: { 'www-authenticate': REALM },
      extra: { signup_url: '/signup' },
    });
  }
  return key;
}

/**
 * What the router runs before a route that declares `auth: 'key'`
 * (router.ts Guard): the key, required (401) unless an x402 payment may stand
 * in for it, and the role the route declares (403). The handler then reads
 * the key with `callerKey`. An agent key may act and blow a fuse, never manage
 * or revive: the governed agent holds no kill switch.
 */
export function keyGuard(ctx: AppContext, route: RouteRecord): ((event: H3Event) => Promise<void>) | undefined {
  const doc = route.doc;
  if (doc?.auth !== 'key') return undefined;
  const operatorOnly = doc.role === 'operator';
  if (route.paidInPlaceOfKey && !operatorOnly) return async (event) => void (await optionalKey(event, ctx));
  return async (event) => {
    const key = await requireKey(event, ctx);
    if (operatorOnly && key.role !== 'operator') throw operatorKeyRequired(doc, key);
  };
}

/** The key the router authenticated for a route that declares `auth: 'key'` (keyGuard). */
export function callerKey(event: H3Event): ApiKey {
  const key = event.context.apiKey;
  if (!key) throw new Error(`${event.req.method} ${event.url.pathname} reads the caller's key, but its route does not declare auth: 'key'`);
  return key;
}

/** A test key reads `what` but changes none of it: 403 for a change made with one (docs/test-mode.md). */
export function liveKeyOnly(key: ApiKey, what: string): void {
  if (isTestKey(key))
    throw new Problem({
      status: 403,
      code: 'test_key_live_setting',
      title: 'Forbidden',
      detail: `a test key cannot change ${what}: use a live operator key or the dashboard`,
    });
}

function operatorKeyRequired(doc: RouteDoc, key: ApiKey): Problem {
  return new Problem({
    status: 403,
    code: 'operator_key_required',
    title: 'Forbidden',
    detail: `${doc.summary}: this needs an operator key, and ${key.id} is an agent key (agent keys act and may blow a fuse or licence, never revive or manage one). Fix: create an operator key on /dashboard/keys (role "operator") and use it here, or do this in the dashboard (fuses on /dashboard/fuses)`,
    extra: { key_role: key.role, required_role: 'operator', fix_url: '/dashboard/keys?role=operator' },
  });
}

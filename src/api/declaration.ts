/**
 * The one form an API operation is declared in (api/operation.ts): what it is
 * (method, path, and its RouteDoc: auth, role, input schema, charges, x402)
 * and the typed call its handler is handed: read by the act pipeline and the
 * operation module both, without either importing the other.
 */
import type { H3Event, HTTPResponse } from 'h3';
import type { z } from 'zod';
import type { ApiKey } from '../ledger/api-keys.ts';
import type { PresentedPayment } from '../payments/x402/gate.ts';
import type { ActEvent } from './act-event.ts';
import type { Bill } from './charges.ts';
import type { Reply } from './reply.ts';
import type { RouteDoc } from './route-doc.ts';

export type Auth = RouteDoc['auth'];

/** The caller's key as a route of this auth sees it: authenticated by the router for `key`, none otherwise. */
export type KeyOf<A extends Auth> = A extends 'key' ? ApiKey : undefined;

/** What a handler answers: a JSON Reply (sent as JSON, its receipt noted for the request log), or a whole HTTP answer. */
export type Answer = Reply | HTTPResponse | Response;

/**
 * What an act declares beyond its doc (api/act.ts): it runs under its
 * Idempotency-Key, takes x402 in place of the key where its charges do, and
 * may be answered on the act lane.
 */
export interface ActOptions {
  /** The body is read (and refused) before the Idempotency-Key is looked at. */
  bodyFirst?: boolean;
  /** Applied to the answer on every door, the first one and a replay alike (e.g. a checkpoint's signed note). */
  after?: (r: Reply) => Reply;
  /** Refuses before anything else, right after the key check (e.g. a feature this gate has not configured). */
  precondition?: () => void;
  /**
   * Answer the plain keyed call (JSON body, cached key, no Idempotency-Key, no payment) from the
   * Node listener, before h3 (api/lane.ts). Only for a handler that reads nothing of its event but
   * `context`, on a route with a body and neither precheck nor optionalBody.
   */
  lane?: boolean;
}

/**
 * An operation's declaration: its method and path, what the reference and the
 * router read (RouteDoc), and how its input is read. The input schema is
 * `body` for a POST and `query` for a GET, the one the router parses the
 * request with and hands the handler as `input`.
 */
export type Declaration<S extends z.ZodType, A extends Auth, P, X extends ActOptions | undefined> = Omit<
  RouteDoc,
  'auth' | 'body' | 'query'
> & {
  method: 'GET' | 'POST';
  path: string;
  auth: A;
  /** The POST's body schema; absent, the operation takes no body and none is read. */
  body?: S;
  /** The GET's query schema. */
  query?: S;
  /** A request without a Content-Type is read as `{}` (the schema's defaults), as when no body was sent. */
  optionalBody?: boolean;
  /** Most bytes the body may have, for an operation whose input is larger by nature (default MAX_BODY_BYTES). */
  bodyLimit?: number;
  /**
   * Checks what the path names before the input is read (and, for an act, before the Idempotency-Key):
   * e.g. the caller's fuse or key, 404 first. Its result is the call's `checked`. An act that takes
   * x402 has none: a keyless payer never reaches it.
   */
  precheck?: (event: H3Event, key: KeyOf<A>) => P | Promise<P>;
  /** Present: the operation is an act, run through the act pipeline (api/act.ts). */
  act?: X;
};

/** What a handler is handed: the parsed input, the caller's key, the path's parameters, the precheck's result and the bill. */
export interface Call<I, K, P, E> {
  /** The body (POST) or query (GET), parsed with the declared schema. */
  readonly input: I;
  readonly key: K;
  /** The path's parameters, as sent (each handler names what it accepts in them). */
  readonly params: Readonly<Record<string, string>>;
  readonly checked: P;
  /** What the operation charges, priced from its declaration (api/charges.ts). */
  readonly bill: Bill;
  /** The x402 payment an act's caller presented in place of a key, or past its hop limit (api/paid-act.ts); none for any other call. */
  readonly payment: PresentedPayment | undefined;
  /** The request's id (x-request-id), as every answer carries it. */
  readonly requestId: string;
  /** The request: an h3 event, or for an act the ActEvent both of its doors build (the typed context and the headers). */
  readonly event: E;
}

/** The call a declaration's handler is handed. */
export type CallOf<S extends z.ZodType, A extends Auth, P, X extends ActOptions | undefined> = Call<
  z.output<S>,
  KeyOf<A>,
  P,
  undefined extends X ? H3Event : ActEvent
>;

/** The parameters of a route whose path has none. */
export const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

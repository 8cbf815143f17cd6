/**
 * What an operation declares (RouteDoc) and the record the router keeps of
 * each route: types alone, so that the modules the router uses (auth, the MCP
 * tool names) read declarations without importing the router.
 */
import type { H3Event } from 'h3';
import type { z } from 'zod';
import type { AuditAction } from '../domain/audit-actions.ts';
import type { ChargeRule } from './charges.ts';
import type { X402Doc } from '../payments/x402/resources.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type Handler = (event: H3Event) => unknown;

/**
 * What the API description (OpenAPI, /.well-known/gate.json, MCP tools) says
 * about a route. The schemas are the very ones the handler parses with, so the
 * description cannot drift from the behaviour.
 */
export interface RouteDoc {
  summary: string;
  /** What a caller needs to know beyond the summary (one rule, the accepted values): the OpenAPI description and the MCP tool's description both say it. */
  description?: string;
  /** `key`: Bearer API key required; `public`: no key; `demo`: no key, rate limited per client. */
  auth: 'key' | 'public' | 'demo';
  /**
   * For `auth: 'key'`: the least role the key needs. `agent` (the default) lets
   * any key in; `operator` answers an agent key 403 before the handler runs.
   * This is the one place that says who may manage and who may only act.
   */
  role?: 'agent' | 'operator';
  /** Groups operations in the reference (gate, pas, prefinality, logs, astl, triggers, clear, nap...). */
  tag: string;
  body?: z.ZodType;
  query?: z.ZodType;
  /** Shape of the success JSON answer: the 200, unless `responses` names another 2xx (a 201 create). */
  response?: z.ZodType;
  /**
   * Answers other than "200 JSON of `response`" and the generic problems: a 201
   * create, a decision body on 202/403/409, a 302 redirect, a text/plain
   * document. A 2xx listed here replaces the default 200.
   */
  responses?: Record<number, ResponseDoc>;
  /** Problem statuses the operation may answer besides 400/401/413/415 (e.g. 402, 404, 409, 422, 429, 503). */
  problems?: number[];
  /**
   * The SKUs this operation charges: each at its fixed toll (src/content/tolls.json) unless
   * `chargeRules` says how else. The route bills through them (api/charges.ts `billOf`).
   */
  charges?: string[];
  /** How a charged SKU is priced when not at its toll (a named amount rule), and which lines are NAP. */
  chargeRules?: Record<string, ChargeRule>;
  /** An example request body for the reference page. */
  example?: unknown;
  /**
   * The MCP tool this operation is offered as (snake_case): its input schema is
   * `body` (or `query`) with the path's parameters, its description `summary`
   * (src/api/mcp.ts). A keyed operation that names none gets one by the rule
   * of src/api/tool-names.ts; a public or demo one is a tool only if it names one.
   */
  tool?: string;
  /**
   * The operation's name (api/tool-names.ts operationName), for an operation
   * that is not a tool and whose derived name another operation has.
   */
  name?: string;
  /**
   * x402: what a keyless call pays for this operation when x402 is configured
   * (src/payments/x402/resources.ts). Every keyed operation that `charges`
   * takes x402, at the lines its act charges, unless it says otherwise here;
   * `false` says it takes none (say why in a comment beside it).
   */
  x402?: X402Doc;
  /** The audit log's entry for a 2xx answer of this change (AuditDoc). */
  audit?: AuditDoc;
}

/**
 * A change the audit log records (docs/accounts.md#audit-log) when the
 * operation answers 2xx, whoever made it: a person in the dashboard, or a key
 * through the API. Recorded in one place for every route (api/audit.ts
 * `routeAuditor`, run by the router after the handler).
 */
export interface AuditDoc {
  /** What the entry says was done: `key.revoked`, `fuse.blown`... (domain/audit-actions.ts). */
  action: AuditAction;
  /**
   * What it was done to: the path parameter naming it, or what the answer says; without it, the
   * answer's id (`id`, `fuse_id`, `grant_id`, `subscription_id`).
   */
  target?: string | ((answer: Record<string, unknown>) => string | undefined);
  /** Non-secret facts of the change, taken from its answer (never a secret, a link or a URL's path). */
  detail?: (answer: Record<string, unknown>) => Record<string, unknown>;
}

export interface ResponseDoc {
  description: string;
  /** The body's schema (the one the handler builds it with); none for a redirect or an empty body. */
  schema?: z.ZodType;
  /** Default application/json. */
  contentType?: string;
}

export interface RouteRecord {
  method: Method;
  path: string;
  pattern: RegExp;
  doc?: RouteDoc | undefined;
  /** An x402 payment may stand in for the key its declaration names (router.ts RouteOptions). */
  paidInPlaceOfKey?: boolean;
}

/**
 * Route registration with a record of every (method, path) pair, so that the
 * top-level fallback can tell 405 (the path exists for another method) from
 * 404, and the API description can list what is served.
 */
import type { Lane } from './lane.ts';
import type { IncomingMessage } from 'node:http';
import type { H3, H3Event } from 'h3';
import type { z } from 'zod';
import type { BackgroundJob } from './jobs.ts';
import type { ChargeRule } from './charges.ts';
import { toolName } from './tool-names.ts';
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
   * x402: what a keyless call pays for this operation when x402 is configured
   * (src/payments/x402/resources.ts). Every keyed operation that `charges`
   * takes x402, at the lines its act charges, unless it says otherwise here;
   * `false` says it takes none (say why in a comment beside it).
   */
  x402?: X402Doc;
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
}

function toPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '**' ? '.*' : seg.startsWith('**:') ? '.+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

/**
 * A GET (and HEAD) answer the Node level may give for a route before h3 runs,
 * when one is ready without waiting (e.g. /health while its database state is
 * fresh); undefined lets h3 run the route as usual. The headers are those of
 * the route's own answer; the ones every answer carries (x-request-id, CORS)
 * are added by the app.
 */
export type ReadyAnswer = (req: IncomingMessage) => { status: number; headers: string[]; body: string } | undefined;

/** Runs before a documented route's handler (enforces what its doc declares, e.g. the role). */
export type Guard = (event: H3Event, doc: RouteDoc) => Promise<void>;

export class Router {
  readonly routes: RouteRecord[] = [];
  /** Declared by route modules; started and stopped by the server (src/api/jobs.ts). */
  readonly jobs: BackgroundJob[] = [];
  /** Answers given before h3 for exact paths (see ReadyAnswer); the route itself is registered as usual. */
  readonly ready = new Map<string, ReadyAnswer>();
  /** POSTs a declared act may answer before h3, for exact paths (api/lane.ts); the route itself is registered as usual. */
  readonly lanes = new Map<string, Lane>();
  readonly app: H3;
  readonly guard: Guard | undefined;
  readonly #toolNames = new Map<string, RouteRecord>();
  constructor(app: H3, guard?: Guard) {
    this.app = app;
    this.guard = guard;
  }

  on(method: Method, path: string, handler: Handler, doc?: RouteDoc): this {
    const record: RouteRecord = { method, path, pattern: toPattern(path), doc };
    this.#claimToolName(record);
    this.routes.push(record);
    const guard = this.guard;
    // Only routes that declare something to enforce pay for the guard (the hop path stays as it was).
    this.app.on(method, path, guard && doc?.role === 'operator' ? async (event) => (await guard(event, doc), handler(event)) : handler);
    return this;
  }
  /** GET, and HEAD with the same handler (Node's HTTP server sends no body for HEAD). */
  get(path: string, handler: Handler, doc?: RouteDoc): this {
    this.app.on('HEAD', path, handler);
    return this.on('GET', path, handler, doc);
  }
  post(path: string, handler: Handler, doc?: RouteDoc): this {
    return this.on('POST', path, handler, doc);
  }

  /** One operation per MCP tool name: a second one stops the registration (start-up, and the build's description). */
  #claimToolName(route: RouteRecord): void {
    const name = toolName(route);
    if (name === undefined) return;
    const twin = this.#toolNames.get(name);
    if (twin) throw new Error(`${twin.method} ${twin.path} and ${route.method} ${route.path} are both the MCP tool ${name}: declare another RouteDoc.tool on one of them`);
    this.#toolNames.set(name, route);
  }

  /** Registers a ReadyAnswer for GET and HEAD of exactly `path` (a route must serve `path` too). */
  readyAnswer(path: string, answer: ReadyAnswer): this {
    this.ready.set(path, answer);
    return this;
  }

  /** Registers an act lane for POSTs to exactly `path` (a route must serve `path` too). */
  lane(path: string, lane: Lane): this {
    this.lanes.set(path, lane);
    return this;
  }

  job(job: BackgroundJob): this {
    this.jobs.push(job);
    return this;
  }

  /** Methods registered for a concrete path ('' when none). */
  allowed(pathname: string): Method[] {
    return [...new Set(this.routes.filter((r) => r.pattern.test(pathname)).map((r) => r.method))];
  }
}

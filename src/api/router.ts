/**
 * Route registration with a record of every (method, path) pair, so that the
 * top-level fallback can tell 405 (the path exists for another method) from
 * 404, and the API description can list what is served.
 */
import type { Lane } from './lane.ts';
import type { IncomingMessage } from 'node:http';
import type { H3, H3Event } from 'h3';
import type { BackgroundJob } from './jobs.ts';
import { operationName, toolName } from './tool-names.ts';
import type { Handler, Method, RouteDoc, RouteRecord } from './route-doc.ts';

export type { AuditDoc, Handler, Method, ResponseDoc, RouteDoc, RouteRecord } from './route-doc.ts';

function toPattern(path: string): RegExp {
  const source = path
    .split('/')
    .map((seg) =>
      seg.startsWith(':') ? '[^/]+' : seg === '**' ? '.*' : seg.startsWith('**:') ? '.+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
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

/**
 * What the router runs before a route's handler to enforce what the route
 * declares (the key of `auth: 'key'`, the role), or undefined when it declares
 * nothing to enforce. Made once per route, at registration (api/auth.ts keyGuard).
 */
export type Guard = (route: RouteRecord) => ((event: H3Event) => Promise<void>) | undefined;

/**
 * What the router runs after a route's handler, with its answer, to record
 * what the route declares happened (its `audit`: api/audit.ts routeAuditor),
 * or undefined when it declares nothing to record. Made once per route.
 */
export type Recorder = (route: RouteRecord) => ((event: H3Event, answer: unknown) => Promise<void>) | undefined;

/** How a route is registered, beyond its declaration. */
export interface RouteOptions {
  /** An x402 payment may stand in for the key its declaration names: the key is read if sent, not required (api/act.ts actRoute). */
  paidInPlaceOfKey?: boolean;
}

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
  readonly recorder: Recorder | undefined;
  readonly #names = new Map<string, RouteRecord>();
  constructor(app: H3, guard?: Guard, recorder?: Recorder) {
    this.app = app;
    this.guard = guard;
    this.recorder = recorder;
  }

  on(method: Method, path: string, handler: Handler, doc?: RouteDoc, options: RouteOptions = {}): this {
    const record: RouteRecord = { method, path, pattern: toPattern(path), doc, ...options };
    this.#claimName(record);
    this.routes.push(record);
    const guarded = this.#guarded(record, handler);
    this.app.on(method, path, guarded);
    // GET is served for HEAD too, with the same checks (Node's HTTP server sends no body for HEAD).
    if (method === 'GET') this.app.on('HEAD', path, guarded);
    return this;
  }

  /** The handler behind what its route declares, then what it records; a route that declares neither costs nothing more. */
  #guarded(route: RouteRecord, handler: Handler): Handler {
    const check = this.guard?.(route);
    const record = this.recorder?.(route);
    const checked: Handler = check ? async (event) => (await check(event), handler(event)) : handler;
    if (!record) return checked;
    return async (event) => {
      const answer = await checked(event);
      await record(event, answer);
      return answer;
    };
  }

  /** One operation per name (api/tool-names.ts): a second one stops the registration (start-up, and the build's description). */
  #claimName(route: RouteRecord): void {
    if (!route.doc) return;
    const name = operationName(route);
    const twin = this.#names.get(name);
    if (twin) {
      const what = toolName(route) !== undefined && toolName(twin) !== undefined ? 'MCP tool' : 'operation';
      throw new Error(
        `${twin.method} ${twin.path} and ${route.method} ${route.path} are both the ${what} ${name}: declare another RouteDoc.${what === 'MCP tool' ? 'tool' : 'name'} on one of them`,
      );
    }
    this.#names.set(name, route);
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

/**
 * The one h3 application: API routes first, then the built site for every
 * other GET, then a problem+json 404 (or 405 when the path exists for another
 * method). Every response carries `x-request-id`.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { H3, toNodeHandler, type H3Event } from 'h3';
import type { AppContext } from './context.ts';
import { Problem, notFound, problemResponse, toProblem } from './problem.ts';
import { Router } from './router.ts';
import { routeGuard } from './route-guard.ts';
import { MCP_PATH, applyCors, registerPreflight } from './cors.ts';
import { commonHeaders, requestIdFor, requestIdOf } from './common-headers.ts';
import { staticFastPath, staticSiteHandler } from './static-site.ts';
import { servedUrls } from '../config.ts';
import { notFoundHtml, useSiteShell } from './html.ts';
import { registerSystemRoutes } from './gate/system.ts';
import { registerPrefinalityRoutes } from './gate/prefinality.ts';
import { registerReceiptRoutes } from './gate/receipts.ts';
import { registerFuseRoutes } from './gate/fuses.ts';
import { registerAlertRoutes } from './gate/alerts.ts';
import { registerReviewRoutes } from './gate/reviews.ts';
import { registerHopRoutes } from './gate/hop.ts';
import { registerPasRoutes } from './gate/pas.ts';
import { registerLogRoutes } from './site/logs.ts';
import { registerTileRoutes } from './site/tiles.ts';
import { registerLiveDiscoveryRoutes } from './site/discovery-live.ts';
import { registerRequestLogRoutes, requestLogOf } from './request-log.ts';
import { registerCommitmentRoutes } from './site/commitments.ts';
import { registerPremiumActs } from './site/premium-acts.ts';
import { registerListingRoutes } from './site/listings.ts';
import { registerGamRoutes } from './site/gam.ts';
import { registerSignalRoutes } from './site/signal.ts';
import { registerLogSearchRoutes } from './site/log-search.ts';
import { allowedOrigins, registerMcpRoutes } from './mcp.ts';
import { registerOpenApiRoutes } from './openapi.ts';
import { registerAstlRoutes } from './site/astl.ts';
import { registerAbsenceRoutes } from './site/absence.ts';
import { registerOracleRoutes } from './site/oracle.ts';
import { registerTriggerRoutes } from './site/triggers.ts';
import { registerWebhookRoutes } from './site/webhooks.ts';
import { registerClearingRoutes } from './site/clearing.ts';
import { registerMeteredRoutes } from './site/metered-routes.ts';
import { registerKeyRoutes } from './gate/keys.ts';
import { registerAccountSpendCapRoutes } from './gate/account-spend-cap.ts';
import { registerMemberRoutes } from './gate/members.ts';
import { registerManageRoutes } from './gate/manage.ts';
import { registerSigninRoutes } from './dashboard/signin.ts';
import { registerDashboardRoutes } from './dashboard/pages.ts';
import { registerOverview } from './dashboard/overview.ts';
import { registerKeyPages } from './dashboard/keys-pages.ts';
import { registerAccountPages } from './dashboard/account.ts';
import { registerPasskeyRoutes } from './dashboard/passkeys.ts';
import { registerManagePages } from './dashboard/manage-pages.ts';
import { registerAlertsPage } from './dashboard/alerts-page.ts';
import { registerReviewsPage } from './dashboard/reviews-page.ts';
import { registerRequestsPage } from './dashboard/requests-page.ts';
import { registerMembersPage } from './dashboard/members-page.ts';
import { registerAuditPage } from './dashboard/audit-page.ts';
import { registerAuditRoutes, routeAuditor } from './audit.ts';
import { registerOperatorRoutes } from './gate/operator.ts';
import { registerPricingRoutes } from './site/pricing.ts';
import { registerX402Routes } from './x402.ts';

export type RouteModule = (router: Router, ctx: AppContext) => void;

/** Every route module, in one place. Later areas add themselves here. */
const MODULES: RouteModule[] = [
  registerSystemRoutes,
  registerReceiptRoutes,
  registerFuseRoutes,
  registerAlertRoutes,
  registerReviewRoutes,
  registerHopRoutes,
  registerLogRoutes,
  registerTileRoutes,
  registerLiveDiscoveryRoutes,
  registerCommitmentRoutes,
  registerRequestLogRoutes,
  registerAuditRoutes,
  registerPremiumActs,
  registerListingRoutes,
  registerGamRoutes,
  registerSignalRoutes,
  registerLogSearchRoutes,
  registerPrefinalityRoutes,
  registerPasRoutes,
  registerAstlRoutes,
  registerAbsenceRoutes,
  registerOracleRoutes,
  registerTriggerRoutes,
  registerWebhookRoutes,
  registerClearingRoutes,
  registerMeteredRoutes,
  registerMcpRoutes,
  registerOpenApiRoutes,
  registerKeyRoutes,
  registerAccountSpendCapRoutes,
  registerMemberRoutes,
  registerManageRoutes,
  registerSigninRoutes,
  registerOverview,
  registerKeyPages,
  registerAccountPages,
  registerDashboardRoutes,
  registerPasskeyRoutes,
  registerManagePages,
  registerAlertsPage,
  registerReviewsPage,
  registerRequestsPage,
  registerMembersPage,
  registerAuditPage,
  registerOperatorRoutes,
  registerPricingRoutes,
  registerX402Routes,
];

/** Registers every route module on `router` (also used to describe the API without serving it). */
export function registerRoutes(router: Router, ctx: AppContext, extraModules: RouteModule[] = []): void {
  for (const register of [...MODULES, ...extraModules]) register(router, ctx);
}

export interface App {
  h3: H3;
  router: Router;
  /** The Node request listener: the built site's plain GETs at the Node level, everything else through h3. */
  node: RequestListener;
}

/**
 * Sets the headers every answer carries (x-request-id, and CORS outside /mcp)
 * on the Node response, where setting them is cheap; onRequest then only reads
 * the id back. h3 would otherwise build a Headers object for them per request
 * and merge it into each answer's. Paths with an escape are left to onRequest,
 * which sees them decoded (so "/mcp" spelled with an escape is still /mcp).
 */
function setCommonHeaders(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path.includes('%')) return;
  const headers = commonHeaders(requestIdFor(req));
  // /mcp keeps its own CORS (cors.ts): only its request id.
  const count = path === MCP_PATH ? 2 : headers.length;
  for (let i = 0; i < count; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
}

/**
 * A request path with a dot segment ("..", ".", or spelled %2e%2e) would be
 * resolved by the URL parser to another path (/go/%2e%2e/%2e%2e to the home
 * page). Clients normalize such paths before sending them, so one that arrives
 * names nothing: it is answered 404 as a problem, never as the page it folds onto.
 */
export function refuseDotSegments(rawUrl: string | undefined): void {
  if (!rawUrl || !(rawUrl.includes('.') || /%2e/i.test(rawUrl))) return;
  const q = rawUrl.search(/[?#]/);
  const path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const dots = path.split('/').some((seg) => /^(?:\.|%2e){1,2}$/i.test(seg));
  if (dots) throw notFound(`nothing is served at ${path}: a path with "." or ".." segments names no resource`, 'route_not_found');
}

export function createApp(ctx: AppContext, extraModules: RouteModule[] = []): App {
  const h3 = new H3({
    silent: true,
    onRequest(event: H3Event) {
      refuseDotSegments(event.runtime?.node?.req?.url);
      const preset = event.runtime?.node?.res?.getHeader('x-request-id');
      if (typeof preset === 'string') {
        event.context.requestId = preset;
        return;
      }
      const id = requestIdOf(event.req.headers.get('x-request-id'));
      event.context.requestId = id;
      event.res.headers.set('x-request-id', id);
      applyCors(event);
    },
    onError(error, event) {
      const problem = toProblem(error);
      if (problem.status >= 500) {
        ctx.log('error', 'request failed', {
          request_id: event.context.requestId,
          path: event.url.pathname,
          error: String((error as Error).cause ?? error),
        });
      }
      return problemResponse(problem, event);
    },
  });
  const router = new Router(
    h3,
    (route) => routeGuard(ctx, route),
    (route) => routeAuditor(ctx, route),
  );
  registerRoutes(router, ctx, extraModules);

  const site = staticSiteHandler(ctx.config.STATIC_DIR, servedUrls(ctx.config));
  useSiteShell(ctx.config.STATIC_DIR);
  registerPreflight(h3, router, site.has, () => allowedOrigins(ctx));
  h3.all('/**', async (event: H3Event) => {
    const served = await site(event);
    if (served !== undefined) return served;
    const allowed: string[] = router.allowed(event.url.pathname);
    // A file of the built site (a static catalog) answers GET and HEAD only.
    if (site.has(event.url.pathname)) allowed.push('GET', 'HEAD');
    const method = event.req.method;
    // A path a route's pattern takes but h3 did not route with the method asked (an empty segment:
    // /receipts/tile//000) names nothing: 404. 405 is for a method the path is not served with.
    const servedWith = allowed.includes(method) || (method === 'HEAD' && allowed.includes('GET'));
    if (allowed.length > 0 && !servedWith) {
      throw new Problem({
        status: 405,
        code: 'method_not_allowed',
        title: 'Method not allowed',
        detail: `${method} is not allowed on ${event.url.pathname}; use ${allowed.join(', ')}`,
        headers: { allow: allowed.join(', ') },
      });
    }
    const page = notFoundHtml(event);
    if (page) return page;
    throw notFound(`nothing is served at ${event.url.pathname}`, 'route_not_found');
  });
  const fastPath = staticFastPath(site.assets, (path) => router.allowed(path).length > 0);
  const viaH3 = toNodeHandler(h3);
  // A route's ready answer (router.readyAnswer), for GET and HEAD of its exact path, without a query.
  const readyAnswer = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const answer = router.ready.get(req.url ?? '')?.(req);
    if (!answer) return false;
    res.writeHead(answer.status, [...commonHeaders(requestIdFor(req)), ...answer.headers]);
    res.end(answer.body);
    return true;
  };
  const requestLog = ctx.config.REQUEST_LOG_ENABLED ? requestLogOf(ctx) : undefined;
  const node: RequestListener = (req, res) => {
    // Only a request with a key can be in an account's request log.
    if (requestLog && req.headers.authorization !== undefined) requestLog.watch(req);
    if (fastPath(req, res) || readyAnswer(req, res)) return;
    // A lane sends the common headers with its answer, in one writeHead.
    if (req.method === 'POST' && router.lanes.get(req.url ?? '')?.(req, res)) return;
    setCommonHeaders(req, res);
    void viaH3(req, res);
  };
  return { h3, router, node };
}

/**
 * What every signed-in page and form shares: the session cookie, CSRF checks,
 * form bodies and HTML answers.
 *
 * - Session: a random 256-bit secret in an HttpOnly, SameSite=Lax cookie
 *   (Secure and `__Host-` prefixed when the service is reached over https);
 *   the database keeps only its SHA-256.
 * - CSRF, on every state-changing form: the Origin (or, without one, the
 *   Referer) must be this service's, and the form must carry a token. Signed
 *   in, the token is derived from the session secret (a synchronizer token
 *   nobody else can compute); before sign-in it is a double-submit cookie.
 */
import { createHash, randomBytes } from 'node:crypto';
import { HTTPResponse, type H3Event } from 'h3';
import { nowIso } from '../../ids.ts';
import { getApiKey, type ApiKey } from '../../ledger/api-keys.ts';
import { loginOfAccount, sessionAccount } from '../../ledger/accounts.ts';
import { readRawBody } from '../body.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml, htmlPage } from '../html.ts';
import { Problem } from '../problem.ts';

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('base64url');
export const newSecret = () => randomBytes(32).toString('base64url');

function secure(event: H3Event, ctx: AppContext): boolean {
  return event.url.protocol === 'https:' || ctx.config.BASE_URL.startsWith('https:');
}
const sessionCookie = (event: H3Event, ctx: AppContext) => (secure(event, ctx) ? '__Host-fg_session' : 'fg_session');
const csrfCookie = (event: H3Event, ctx: AppContext) => (secure(event, ctx) ? '__Host-fg_csrf' : 'fg_csrf');

export function cookie(event: H3Event, name: string): string | undefined {
  for (const part of (event.req.headers.get('cookie') ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function setCookieHeader(event: H3Event, ctx: AppContext, name: string, value: string, maxAge: number): string {
  return [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAge}`, ...(secure(event, ctx) ? ['Secure'] : [])].join('; ');
}

export const sessionCookieHeader = (event: H3Event, ctx: AppContext, secret: string) =>
  setCookieHeader(event, ctx, sessionCookie(event, ctx), secret, ctx.config.SESSION_TTL_SECONDS);
export const clearSessionCookieHeader = (event: H3Event, ctx: AppContext) => setCookieHeader(event, ctx, sessionCookie(event, ctx), '', 0);

export interface Session {
  accountId: string;
  email: string;
  /** The account's dashboard key: the operator identity every dashboard action runs as. */
  key: ApiKey;
  /** The CSRF token of this session's forms. */
  csrf: string;
}

/** The signed-in session, or undefined. */
export async function readSession(event: H3Event, ctx: AppContext): Promise<Session | undefined> {
  const secret = cookie(event, sessionCookie(event, ctx));
  if (!secret) return undefined;
  const accountId = await sessionAccount(ctx.ledger.read, sha256(secret), nowIso());
  if (!accountId) return undefined;
  const login = await loginOfAccount(ctx.ledger.read, accountId);
  const key = login && (await getApiKey(ctx.ledger.read, login.dashboard_key_id));
  // A revoked dashboard key ends the dashboard too (keys API refuses to revoke it, the CLI can).
  if (!login || !key || key.revoked_at) return undefined;
  return { accountId, email: login.email, key, csrf: sha256(`csrf\0${secret}`) };
}

export const sessionSecretOf = (event: H3Event, ctx: AppContext) => cookie(event, sessionCookie(event, ctx));

/** Redirect answers (303 after a form post, so the browser GETs the next page). */
export function redirect(location: string, setCookies: string[] = []): HTTPResponse {
  const headers = new Headers({ location, 'cache-control': 'no-store' });
  for (const c of setCookies) headers.append('set-cookie', c);
  return new HTTPResponse(null, { status: 303, headers });
}

export function page(html: string, status = 200, setCookies: string[] = [], extra: Record<string, string> = {}): HTTPResponse {
  const headers = new Headers({
    ...extra,
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': "frame-ancestors 'none'",
  });
  for (const c of setCookies) headers.append('set-cookie', c);
  return new HTTPResponse(html, { status, headers });
}

/** A pre-session CSRF token (double-submit): the cookie to set, if new, and the token for the form. */
export function preSessionCsrf(event: H3Event, ctx: AppContext): { token: string; setCookie?: string } {
  const existing = cookie(event, csrfCookie(event, ctx));
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: existing };
  const token = newSecret();
  return { token, setCookie: setCookieHeader(event, ctx, csrfCookie(event, ctx), token, 7200) };
}

const forbidden = (detail: string) => new Problem({ status: 403, code: 'csrf_refused', title: 'Forbidden', detail });

/** Refuses a form post from another origin (by Origin, or Referer when there is no Origin). */
export function checkOrigin(event: H3Event, ctx: AppContext): void {
  const ours = new Set([event.url.origin, new URL(ctx.config.BASE_URL).origin]);
  const origin = event.req.headers.get('origin');
  const referer = event.req.headers.get('referer');
  const from = origin && origin !== 'null' ? origin : referer && URL.canParse(referer) ? new URL(referer).origin : undefined;
  if (!from || !ours.has(from)) throw forbidden(`a form post must come from this site (origin ${from ?? 'missing'})`);
}

/** Refuses a cross-site form post: a foreign Origin/Referer, or a missing or wrong token. */
export function checkCsrf(event: H3Event, ctx: AppContext, form: URLSearchParams, session: Session | undefined): void {
  checkOrigin(event, ctx);
  const token = form.get('csrf') ?? '';
  const expected = session ? session.csrf : cookie(event, csrfCookie(event, ctx));
  if (!expected || token !== expected) throw forbidden('the form token is missing or does not match this session: reload the page and try again');
}

/** Reads an application/x-www-form-urlencoded body. */
export async function readForm(event: H3Event, ctx: AppContext): Promise<URLSearchParams> {
  const type = (event.req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new Problem({ status: 415, code: 'unsupported_media_type', title: 'Unsupported media type', detail: 'send the form as application/x-www-form-urlencoded' });
  }
  return new URLSearchParams(Buffer.from(await readRawBody(event, ctx.config.MAX_BODY_BYTES)).toString('utf8'));
}

/** A signed-in form post: its Origin, session and CSRF token checked; null when nobody is signed in. */
export async function readSignedInForm(event: H3Event, ctx: AppContext): Promise<{ session: Session; form: URLSearchParams } | null> {
  checkOrigin(event, ctx);
  const form = await readForm(event, ctx);
  const session = await readSession(event, ctx);
  if (!session) return null;
  checkCsrf(event, ctx, form, session);
  return { session, form };
}

export const csrfField = (token: string) => `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;

const NAV: Array<[string, string]> = [
  ['/dashboard', 'Overview'],
  ['/dashboard/keys', 'Keys'],
  ['/dashboard/fuses', 'Fuses'],
  ['/dashboard/licences', 'Licences'],
  ['/dashboard/grants', 'Grants'],
  ['/dashboard/webhooks', 'Webhooks'],
  ['/dashboard/alerts', 'Alerts'],
  ['/dashboard/receipts', 'Receipts'],
  ['/dashboard/passkeys', 'Passkeys'],
];

export const DASHBOARD_CSS = `nav.dash ul{list-style:none;display:flex;flex-wrap:wrap;gap:1rem;padding:0;margin:0 0 1rem}
nav.dash a[aria-current]{font-weight:700}form.inline{display:inline}label{display:block;margin:.5rem 0 .2rem}
input,select,button{font:inherit;padding:.3rem .5rem}button{cursor:pointer}.notice{background:#ecfdf5;border:1px solid #047857;padding:.75rem}
.error{background:#fef2f2;border:1px solid #b91c1c;padding:.75rem}.muted{color:#4b5563}`;

/** A signed-in dashboard page: the nav, sign-out forms, then `body` (trusted HTML). */
export function dashboardPage(session: Session, current: string, title: string, body: string): string {
  const nav = NAV.map(([href, label]) => `<li><a href="${href}"${href === current ? ' aria-current="page"' : ''}>${label}</a></li>`).join('');
  return htmlPage(
    title,
    `<nav class="dash" aria-label="Dashboard"><ul>${nav}</ul></nav>
<p class="muted">Signed in as ${escapeHtml(session.email)}.
<form class="inline" method="post" action="/signout">${csrfField(session.csrf)}<button>Sign out</button></form>
<form class="inline" method="post" action="/signout-everywhere">${csrfField(session.csrf)}<button>Sign out everywhere</button></form></p>
<h1>${escapeHtml(title)}</h1>${body}`,
    DASHBOARD_CSS,
  );
}

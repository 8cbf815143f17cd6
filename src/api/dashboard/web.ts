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
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { HTTPResponse, type H3Event } from 'h3';
import { nowIso } from '../../ids.ts';
import { getApiKey, type ApiKey } from '../../ledger/api-keys.ts';
import { accountOwner, loginOfAccount } from '../../ledger/accounts.ts';
import { areasInUse, type AreasInUse } from '../../ledger/account-views.ts';
import { dashboardTestKey, ensureDashboardTestKey, hasOwnLiveKey } from '../../ledger/dashboard-modes.ts';
import { membershipsOf, sessionPerson, type Membership } from '../../ledger/members.ts';
import { allows, roleForForm, type TeamRole } from '../../domain/team-roles.ts';
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
  return [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${maxAge}`, ...(secure(event, ctx) ? ['Secure'] : [])].join(
    '; ',
  );
}

export const sessionCookieHeader = (event: H3Event, ctx: AppContext, secret: string) =>
  setCookieHeader(event, ctx, sessionCookie(event, ctx), secret, ctx.config.SESSION_TTL_SECONDS);
export const clearSessionCookieHeader = (event: H3Event, ctx: AppContext) => setCookieHeader(event, ctx, sessionCookie(event, ctx), '', 0);

/**
 * The signed-in hint: a non-secret cookie scripts may read, so a static page's
 * header can say "Dashboard" and "Sign out" instead of "Sign in". It grants
 * nothing; the HttpOnly session cookie is the credential.
 */
const HINT = 'fg_signed_in';
function hintCookie(event: H3Event, ctx: AppContext, on: boolean): string {
  return [
    `${HINT}=${on ? '1' : ''}`,
    'Path=/',
    'SameSite=Lax',
    `Max-Age=${on ? ctx.config.SESSION_TTL_SECONDS : 0}`,
    ...(secure(event, ctx) ? ['Secure'] : []),
  ].join('; ');
}
/** The dashboard's mode cookie (not a credential: it only says which side the pages show); a new session starts without it. */
const MODE = 'fg_mode';
const clearModeCookie = (event: H3Event, ctx: AppContext) => setCookieHeader(event, ctx, MODE, '', 0);
/** The cookies that start a session: the session itself and the signed-in hint (and the account's own default mode). */
export const signedInCookies = (event: H3Event, ctx: AppContext, secret: string) => [
  sessionCookieHeader(event, ctx, secret),
  hintCookie(event, ctx, true),
  clearModeCookie(event, ctx),
];
/** The cookies that end a session in this browser. */
export const signedOutCookies = (event: H3Event, ctx: AppContext) => [
  clearSessionCookieHeader(event, ctx),
  hintCookie(event, ctx, false),
  clearModeCookie(event, ctx),
];

/**
 * Where to go after signing in: a path of this site from `next` (a deep link
 * that sent the person to sign in), else the dashboard. Refuses anything that
 * could leave the site (`//host`, `/\host`, schemes).
 */
export function safeNext(next: string | null | undefined): string {
  if (!next || next.length > 512 || !/^\/(?![/\\])[A-Za-z0-9/_.~%?&=:+,-]*$/.test(next)) return '/dashboard';
  return next;
}

/** The sign-in page, remembering the page the person asked for. */
export function toSignin(event: H3Event): HTTPResponse {
  const here = event.url.pathname + event.url.search;
  return redirect(here === '/dashboard' ? '/signin' : `/signin?next=${encodeURIComponent(here)}`);
}

export interface Session {
  /** The account this session acts in: the person's own, or one they were invited to (docs/accounts.md#team-accounts). */
  accountId: string;
  /** The person signed in (ledger/members.ts): their sign-in, sessions and passkeys are theirs, whichever account they act in. */
  personId: string;
  email: string;
  /** The person's role in `accountId`. */
  role: TeamRole;
  /** Every account the person may act in, their own first. */
  accounts: Membership[];
  /** The occasional areas the account uses (on the side the mode shows): their tabs show only then. */
  areas: AreasInUse;
  /**
   * The key every dashboard action runs as: the account's dashboard key, or in
   * test mode its dashboard test key (docs/test-mode.md), so that the pages
   * show and change test objects only.
   */
  key: ApiKey;
  /** The account's live dashboard key, for what only a live key may change (the account's spend cap). */
  liveKey: ApiKey;
  /** The "Test mode" switch: test while on. */
  mode: 'live' | 'test';
  /** The ids of the dashboard's own keys (live and test): not keys to list or manage. */
  dashboardKeyIds: readonly string[];
  /** The CSRF token of this session's forms. */
  csrf: string;
}

/** The cookie that keeps the dashboard in `mode` in this browser. */
export function modeCookie(event: H3Event, ctx: AppContext, mode: 'live' | 'test'): string {
  return setCookieHeader(event, ctx, MODE, mode, 365 * 86_400);
}

/** Whether a key (as the API shows it) is one the session's pages list: of the switch's mode, and not the dashboard's own. */
export const listedKey = (s: Pick<Session, 'mode' | 'dashboardKeyIds'>, k: Record<string, unknown>): boolean =>
  !s.dashboardKeyIds.includes(String(k.id)) && (k.mode ?? 'live') === s.mode;

/** The owner (ownerId) whose objects the session's pages show: the account, or its test side in test mode. */
export const sessionOwner = (s: Pick<Session, 'accountId' | 'mode'>): string => accountOwner(s.accountId, s.mode === 'test');

/** The signed-in session, or undefined. */
export async function readSession(event: H3Event, ctx: AppContext): Promise<Session | undefined> {
  const secret = cookie(event, sessionCookie(event, ctx));
  if (!secret) return undefined;
  const db = ctx.ledger.read;
  const found = await sessionPerson(db, sha256(secret), nowIso());
  if (!found) return undefined;
  const { personId } = found;
  const [login, accounts] = await Promise.all([loginOfAccount(db, personId), membershipsOf(db, personId)]);
  // An account the person was removed from since falls back to their own.
  const acting =
    accounts.find((m) => m.account_id === (found.actingAccountId ?? personId)) ?? accounts.find((m) => m.account_id === personId);
  if (!login || !acting) return undefined;
  const accountId = acting.account_id;
  const keyId = accountId === personId ? login.dashboard_key_id : (await loginOfAccount(db, accountId))?.dashboard_key_id;
  const key = keyId ? await getApiKey(db, keyId) : undefined;
  // A revoked dashboard key ends the dashboard too (keys API refuses to revoke it, the CLI can).
  if (!key || key.revoked_at) return undefined;
  // Test mode until the account has a live key of its own, or as the switch was last left.
  const chosen = cookie(event, MODE);
  const mode = chosen === 'test' || (chosen !== 'live' && !(await hasOwnLiveKey(db, accountId, key.id))) ? 'test' : 'live';
  const limits = { hopLimit: ctx.config.HOP_LIMIT_DEFAULT, hopPeriod: ctx.config.HOP_LIMIT_PERIOD };
  const [testKey, areas] = await Promise.all([
    mode === 'test' ? ensureDashboardTestKey(ctx.ledger, accountId, limits) : dashboardTestKey(db, accountId),
    areasInUse(db, accountOwner(accountId, mode === 'test')),
  ]);
  return {
    accountId,
    personId,
    email: login.email,
    role: acting.role,
    accounts,
    areas,
    key: mode === 'test' ? testKey! : key,
    liveKey: key,
    mode,
    dashboardKeyIds: testKey ? [key.id, testKey.id] : [key.id],
    csrf: sha256(`csrf\0${secret}`),
  };
}

/** Refuses (403, `team_role_required`) what the session's role in its account does not allow; `what` names the action. */
export function requireRole(session: Session, need: TeamRole, what: string): void {
  if (allows(session.role, need)) return;
  throw new Problem({
    status: 403,
    code: 'team_role_required',
    title: 'Forbidden',
    detail: `${what} needs the ${need} role in this account, and you are ${session.role === 'operator' ? 'an' : 'a'} ${session.role}: ask an owner of the account (Members) for it`,
    extra: { role: session.role, required_role: need },
  });
}

export const sessionSecretOf = (event: H3Event, ctx: AppContext) => cookie(event, sessionCookie(event, ctx));

/**
 * A one-time note carried across a redirect (POST-redirect-GET): a new key's
 * secret must survive the 303 to be shown once, yet never be stored by the
 * server. It travels in an HttpOnly cookie, AES-256-GCM sealed under a key
 * derived from this session's secret, and the next page read clears it.
 */
const FLASH = 'fg_flash';
const flashKey = (sessionSecret: string) => createHash('sha256').update(`flash\0${sessionSecret}`).digest();

export function flashCookie(event: H3Event, ctx: AppContext, data: unknown): string {
  const secret = sessionSecretOf(event, ctx) ?? '';
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', flashKey(secret), iv);
  const body = Buffer.concat([c.update(JSON.stringify(data), 'utf8'), c.final()]);
  return setCookieHeader(event, ctx, FLASH, Buffer.concat([iv, c.getAuthTag(), body]).toString('base64url'), 300);
}

/** The flash of this session (undefined when none, or sealed for another session), and the cookie that clears it. */
export function takeFlash<T>(event: H3Event, ctx: AppContext): { data: T | undefined; clear: string[] } {
  const raw = cookie(event, FLASH);
  if (!raw) return { data: undefined, clear: [] };
  const clear = [setCookieHeader(event, ctx, FLASH, '', 0)];
  try {
    const buf = Buffer.from(raw, 'base64url');
    const d = createDecipheriv('aes-256-gcm', flashKey(sessionSecretOf(event, ctx) ?? ''), buf.subarray(0, 12));
    d.setAuthTag(buf.subarray(12, 28));
    return { data: JSON.parse(Buffer.concat([d.update(buf.subarray(28)), d.final()]).toString('utf8')) as T, clear };
  } catch {
    return { data: undefined, clear };
  }
}

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
  if (!expected || token !== expected)
    throw forbidden('the form token is missing or does not match this session: reload the page and try again');
}

/** Reads an application/x-www-form-urlencoded body. */
export async function readForm(event: H3Event, ctx: AppContext): Promise<URLSearchParams> {
  const type = (event.req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw new Problem({
      status: 415,
      code: 'unsupported_media_type',
      title: 'Unsupported media type',
      detail: 'send the form as application/x-www-form-urlencoded',
    });
  }
  return new URLSearchParams(Buffer.from(await readRawBody(event, ctx.config.MAX_BODY_BYTES)).toString('utf8'));
}

/**
 * A signed-in form post: its Origin, session and CSRF token checked, and the
 * role its path needs (team-roles.ts roleForForm; 403 `team_role_required`);
 * null when nobody is signed in.
 */
export async function readSignedInForm(event: H3Event, ctx: AppContext): Promise<{ session: Session; form: URLSearchParams } | null> {
  checkOrigin(event, ctx);
  const form = await readForm(event, ctx);
  const session = await readSession(event, ctx);
  if (!session) return null;
  checkCsrf(event, ctx, form, session);
  requireRole(session, roleForForm(event.url.pathname), `POST ${event.url.pathname}`);
  return { session, form };
}

const FORM = /<form\b([^>]*)>[\s\S]*?<\/form>/g;
const ACTION = /\baction="([^"]*)"/;

/**
 * `html` without the forms `role` may not post (team-roles.ts roleForForm): a
 * viewer sees no button that would answer 403. Every dashboard page passes
 * through it (dashboardPage).
 */
export function formsFor(role: TeamRole, html: string): string {
  return html.replace(FORM, (form, attributes: string) => {
    const action = ACTION.exec(attributes)?.[1];
    return action === undefined || allows(role, roleForForm(action.replaceAll('&amp;', '&'))) ? form : '';
  });
}

/** The notice a page shows after an action redirected to it with `?done=<what>`: one of its own messages, never the query's text. */
export function doneNotice(event: H3Event, messages: Readonly<Record<string, string>>): string {
  const done = event.url.searchParams.get('done') ?? '';
  return Object.hasOwn(messages, done) ? `<p class="notice" role="status">${escapeHtml(messages[done]!)}</p>` : '';
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
  ['/dashboard/reviews', 'Reviews'],
  ['/dashboard/receipts', 'Receipts'],
  ['/dashboard/requests', 'Requests'],
  ['/dashboard/members', 'Members'],
  ['/dashboard/audit', 'Audit log'],
  ['/dashboard/passkeys', 'Passkeys'],
  ['/dashboard/account', 'Account'],
];

/** Tabs of areas few accounts use: shown once the account uses the area (or while on it), else under "More". */
const OCCASIONAL: Record<string, keyof AreasInUse> = {
  '/dashboard/licences': 'licences',
  '/dashboard/grants': 'grants',
  '/dashboard/webhooks': 'webhooks',
};

export const DASHBOARD_CSS = `nav.dash ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;margin:0 0 1rem}
nav.dash a{display:inline-block;padding:.2rem 0}nav.dash summary{cursor:pointer;padding:.2rem 0}nav.dash details ul{list-style:none;padding:.25rem 0 0 .75rem;margin:0}nav.dash a[aria-current]{font-weight:700}form.inline{display:inline}label{display:block;margin:.5rem 0 .2rem}
.server input,.server select{font:inherit;padding:.4rem .5rem;border:1px solid var(--field,#6b7280);border-radius:.35rem;background:var(--paper,#fff);color:var(--ink,#111827);max-width:100%}
.server input:focus-visible,.server select:focus-visible,.server summary:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
button{cursor:pointer}.notice{background:var(--ok-bg,#ecfdf5);border:1px solid var(--ok,#047857);padding:.75rem;border-radius:.35rem}
.error{background:var(--bad-bg,#fef2f2);border:1px solid var(--bad,#b91c1c);padding:.75rem;border-radius:.35rem}.muted{color:var(--muted,#4b5563)}
.danger{background:var(--bad,#b91c1c);color:var(--paper,#fff)}.row{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end}.row label{margin-top:0}
.secret{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}.secret code{font-size:1rem;padding:.3rem .5rem;overflow-wrap:anywhere}
.steps{list-style:none;padding:0}.steps>li{border:1px solid var(--line,#d1d5db);border-radius:.5rem;padding:.5rem 1rem;margin:.75rem 0}
.steps>li>h3{margin:.25rem 0;font-size:1.05rem}.steps .tick{display:inline-block;min-width:4.5rem;font-weight:700}.steps .done .tick{color:var(--ok,#047857)}.steps .todo .tick{color:var(--muted,#4b5563)}
.keys td:last-child{white-space:nowrap}.actions{display:flex;flex-wrap:wrap;gap:.4rem}.actions a,.actions button{margin:0}
@media (max-width:40rem){table.cards-sm thead{position:absolute;left:-999px}table.cards-sm tr{display:block;border-top:1px solid var(--line,#d1d5db);padding:.5rem 0}
table.cards-sm td{display:block;border:0;padding:.15rem .25rem}.usage svg.chart text.day{font-size:24px}table.cards-sm td[data-label]::before{content:attr(data-label) ": ";font-weight:600}}
.mode-bar{display:flex;justify-content:flex-end;margin:0 0 .5rem}.mode-switch button{display:inline-flex;align-items:center;gap:.5rem;min-height:44px;padding:.25rem .75rem;border:1px solid var(--line,#d1d5db);border-radius:999px;background:var(--paper,#fff);color:var(--ink,#111827);font:inherit}
.mode-switch .track{width:2.25rem;height:1.25rem;border-radius:999px;background:var(--field,#6b7280);position:relative}.mode-switch .track::after{content:"";position:absolute;top:.15rem;left:.15rem;width:.95rem;height:.95rem;border-radius:50%;background:#fff}
.mode-switch [aria-checked=true] .track{background:#c2410c}.mode-switch [aria-checked=true] .track::after{left:1.15rem}
.test-banner{background:#fff7ed;color:#7c2d12;border:1px solid #c2410c;padding:.75rem;border-radius:.35rem}.test-banner a,.test-banner code{color:#7c2d12;background:transparent}
.test-badge{display:inline-block;vertical-align:middle;font-size:.8rem;font-weight:700;padding:.1rem .5rem;border-radius:.35rem;background:#c2410c;color:#fff}`;

/** The header's account region on a signed-in page: who, the dashboard, account settings and sign-out. */
export function accountHeader(session: Session): string {
  return `<span class="who">${escapeHtml(session.email)}</span><a href="/dashboard">Dashboard</a><a href="/dashboard/account">Account</a><form method="post" action="/signout">${csrfField(session.csrf)}<button>Sign out</button></form>`;
}

/**
 * The "Test mode" switch, as in Stripe's dashboard: a form that flips the mode
 * and comes back to `current`; and while it is on, the banner every page shows.
 */
function modeSwitch(session: Session, current: string): string {
  const test = session.mode === 'test';
  const form = `<form method="post" action="/dashboard/mode" class="mode-switch">${csrfField(session.csrf)}<input type="hidden" name="next" value="${escapeHtml(current)}"><button name="mode" value="${test ? 'live' : 'test'}" role="switch" aria-checked="${test}"><span class="track" aria-hidden="true"></span>Test mode</button></form>`;
  const banner = test
    ? `<p class="test-banner"><span class="test-badge">Test mode</span> You are looking at test data: test keys (<code>fg_test_…</code>), their fuses, receipts and requests. Their acts are decided as live ones, logged in the test log and billed nothing. <a href="/docs/test-mode">About test mode</a></p>`
    : '';
  return `<div class="mode-bar">${form}</div>${banner}`;
}

/** A signed-in dashboard page: the account in the header, the dashboard nav and the test-mode switch, then `body` (trusted HTML). */
export function dashboardPage(session: Session, current: string, title: string, body: string): string {
  const item = ([href, label]: [string, string]) =>
    `<li><a href="${href}"${href === current ? ' aria-current="page"' : ''}>${label}</a></li>`;
  const shown = (href: string) => !(href in OCCASIONAL) || href === current || session.areas[OCCASIONAL[href]!];
  const more = NAV.filter(([href]) => !shown(href));
  const nav =
    NAV.filter(([href]) => shown(href))
      .map(item)
      .join('') +
    (more.length ? `<li class="more"><details><summary>More</summary><ul>${more.map(item).join('')}</ul></details></li>` : '');
  const acting =
    session.accounts.length > 1
      ? `<p class="acting muted">Acting in <strong>${escapeHtml(session.accounts.find((m) => m.account_id === session.accountId)?.account_name ?? '')}</strong> as ${escapeHtml(session.role)}. <a href="/dashboard/members#accounts-h">Switch account</a></p>`
      : '';
  const viewer =
    session.role === 'viewer'
      ? '<p class="notice" role="note">You are a viewer of this account: you can read every page, and change nothing. An owner can give you another role.</p>'
      : '';
  return htmlPage(
    title,
    `<nav class="dash" aria-label="Dashboard"><ul>${nav}</ul></nav>${acting}${modeSwitch(session, current)}\n<h1>${escapeHtml(title)}</h1>${viewer}${formsFor(session.role, body)}`,
    DASHBOARD_CSS,
    accountHeader(session),
  );
}

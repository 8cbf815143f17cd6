/**
 * Signing up, in and out on the site (issue 14), as plain HTML forms that work
 * without JavaScript:
 *   GET/POST /signup                 email + password -> an account, signed in
 *   GET/POST /signin                 rate limited per account and per address
 *   GET      /signout                a page with the sign-out button (the static pages' header links here)
 *   POST     /signout                this session
 *   POST     /signout-everywhere     every session of the account
 *   GET/POST /reset/{token}          a one-time link (from "Forgot password?" or `accounts reset-link`)
 * Sign-in keeps `next`, the page that sent the person here, and goes there after.
 */
import { capMicros } from '../spend-cap.ts';
import type { H3Event } from 'h3';
import { dummyHash, hashPassword, verifyPassword } from '../../accounts/passwords.ts';
import { countAttempt } from '../../accounts/throttle.ts';
import { nowIso } from '../../ids.ts';
import { createApiKey } from '../../ledger/api-keys.ts';
import {
  consumePasswordReset,
  deleteSession,
  deleteSessionsOf,
  insertAccount,
  insertLogin,
  insertSession,
  loginByEmail,
  loginOfAccount,
  passwordResetValid,
  setPassword,
} from '../../ledger/accounts.ts';
import { insertAuditEntry } from '../../ledger/audit-log.ts';
import { personalEntry } from '../audit.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml, htmlPage } from '../html.ts';
import { clientAddress } from '../rate-limit.ts';
import type { Router } from '../router.ts';
import { PASSKEY_SCRIPT } from './passkeys.ts';
import {
  DASHBOARD_CSS,
  accountHeader,
  checkCsrf,
  csrfField,
  doneNotice,
  newSecret,
  page,
  preSessionCsrf,
  readForm,
  readSession,
  redirect,
  safeNext,
  sessionSecretOf,
  sha256,
  signedInCookies,
  signedOutCookies,
} from './web.ts';

export const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
export const MIN_PASSWORD = 12;

/** One sentence, where a person decides, on what the public log shows (docs/accounts.md has the rest). */
export const PUBLIC_LOG_NOTE =
  '<p class="muted">What is public: every hop and fuse change gets a receipt in the public log, which anyone can read at <a href="/logs">/logs</a> (the fuse id, the decision, the time and, on its verify page, the key id; never your email, key secrets or request bodies). <a href="/docs/accounts#what-is-public">What the log shows</a>.</p>';

/** What the sign-in page says after the visitor was sent to it (`?done=`). */
const SIGNIN_DONE = {
  'signed-out': 'You are signed out of this browser.',
  'signed-out-everywhere': 'You are signed out on every browser and device.',
  reset: 'Your password is changed, and every session was signed out: sign in with the new password.',
};

function authForm(kind: 'signup' | 'signin', csrf: string, error?: string, email = '', next = '', notice = ''): string {
  const title = kind === 'signup' ? 'Create an account' : 'Sign in';
  const keep = next ? `?next=${encodeURIComponent(next)}` : '';
  const other =
    kind === 'signup'
      ? `<p>Have an account? <a href="/signin${keep}">Sign in</a>.</p>${PUBLIC_LOG_NOTE}`
      : `<p><a href="/forgot">Forgot password?</a></p><p>New here? <a href="/signup${keep}">Create an account</a>.</p>`;
  return htmlPage(
    title,
    `<h1>${title}</h1>${notice}${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/${kind}">${csrfField(csrf)}${next ? `<input type="hidden" name="next" value="${escapeHtml(next)}">` : ''}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="${kind === 'signup' ? 'email' : 'username'}" required value="${escapeHtml(email)}">
<label for="password">Password${kind === 'signup' ? ` (at least ${MIN_PASSWORD} characters)` : ''}</label>
<input id="password" name="password" type="password" autocomplete="${kind === 'signup' ? 'new-password' : 'current-password'}" required minlength="${kind === 'signup' ? MIN_PASSWORD : 1}">
<p><button type="submit">${title}</button></p></form>${
      kind === 'signin'
        ? `<p><button type="button" id="passkey" data-kind="signin" hidden>Sign in with a passkey</button></p><p id="passkey-status" role="status"></p>${PASSKEY_SCRIPT}`
        : '<p class="muted">After this you can add a passkey, to sign in without the password.</p>'
    }${other}`,
    DASHBOARD_CSS,
    undefined,
    kind === 'signup'
      ? 'Create a Fuse Gate account: a key and a fuse for your agent in a minute, usage and receipts in the dashboard.'
      : 'Sign in to the Fuse Gate dashboard: keys, fuses, usage, receipts and account settings.',
  );
}

export function registerSigninRoutes(router: Router, ctx: AppContext): void {
  // HTML forms, not API operations: registered on the app, outside the API description.
  const app = router.app;
  const startSession = async (event: H3Event, accountId: string) => {
    const secret = newSecret();
    const now = new Date();
    await ctx.ledger.write((tx) =>
      insertSession(tx, {
        secretHash: sha256(secret),
        accountId,
        now: nowIso(now),
        expiresAt: nowIso(new Date(now.getTime() + ctx.config.SESSION_TTL_SECONDS * 1000)),
        userAgent: event.req.headers.get('user-agent') ?? undefined,
      }),
    );
    return signedInCookies(event, ctx, secret);
  };
  const formPage = (
    event: H3Event,
    kind: 'signup' | 'signin',
    status = 200,
    error?: string,
    email?: string,
    headers: Record<string, string> = {},
    next = '',
    notice = '',
  ) => {
    const csrf = preSessionCsrf(event, ctx);
    return page(authForm(kind, csrf.token, error, email, next, notice), status, csrf.setCookie ? [csrf.setCookie] : [], headers);
  };
  /** The `next` a form or query carries, kept only when it is a path of this site. */
  const nextOf = (v: string | null) => (v && safeNext(v) === v ? v : '');

  for (const kind of ['signup', 'signin'] as const) {
    app.get(`/${kind}`, async (event) => {
      const next = nextOf(event.url.searchParams.get('next'));
      return (await readSession(event, ctx))
        ? redirect(safeNext(next))
        : formPage(event, kind, 200, undefined, undefined, {}, next, kind === 'signin' ? doneNotice(event, SIGNIN_DONE) : '');
    });
  }

  app.post('/signup', async (event) => {
    const form = await readForm(event, ctx);
    checkCsrf(event, ctx, form, undefined);
    const next = nextOf(form.get('next'));
    const email = (form.get('email') ?? '').trim().toLowerCase();
    const password = form.get('password') ?? '';
    // Every attempt counts, taken or not: the 409 below says an email is in use, so probing is bounded too.
    const perAddress = await countAttempt(ctx.ledger, `signup:addr:${clientAddress(event)}`, ctx.config.SIGNIN_WINDOW_SECONDS);
    if (perAddress.count > ctx.config.SIGNUP_MAX_ATTEMPTS_PER_ADDRESS) {
      const retry = perAddress.retryAfter;
      return formPage(
        event,
        'signup',
        429,
        `Too many sign-up attempts from this address. Try again in ${Math.ceil(retry / 60)} minute(s).`,
        email,
        { 'retry-after': String(retry) },
        next,
      );
    }
    if (!EMAIL.test(email)) return formPage(event, 'signup', 400, 'Enter an email address such as you@example.com.', email, {}, next);
    if (password.length < MIN_PASSWORD || password.length > 1024)
      return formPage(event, 'signup', 400, `The password needs at least ${MIN_PASSWORD} characters.`, email, {}, next);
    if (await loginByEmail(ctx.ledger.read, email))
      return formPage(event, 'signup', 409, 'That email cannot be used to create an account. Sign in instead?', email, {}, next);
    const passwordHash = await hashPassword(password);
    const account = await ctx.ledger.write((tx) =>
      insertAccount(tx, { name: email, spendCapMicros: capMicros(ctx.config.SPEND_CAP_ACCOUNT_DEFAULT_USD ?? null) }),
    );
    // The dashboard's own operator key: its secret is dropped here, so only a signed-in session acts with it.
    const { key } = await createApiKey(ctx.ledger, {
      name: 'dashboard (signed-in session)',
      role: 'operator',
      hopLimit: ctx.config.HOP_LIMIT_DEFAULT,
      accountId: account.id,
      hopPeriod: ctx.config.HOP_LIMIT_PERIOD,
    });
    try {
      await ctx.ledger.write((tx) =>
        insertLogin(tx, { account_id: account.id, email, password_hash: passwordHash, dashboard_key_id: key.id, now: nowIso() }),
      );
    } catch {
      return formPage(event, 'signup', 409, 'That email cannot be used to create an account. Sign in instead?', email, {}, next);
    }
    // A new account lands on the first-run guide, which offers a passkey first.
    return redirect(next || '/dashboard?welcome=1', await startSession(event, account.id));
  });

  app.post('/signin', async (event) => {
    const form = await readForm(event, ctx);
    checkCsrf(event, ctx, form, undefined);
    const next = nextOf(form.get('next'));
    const email = (form.get('email') ?? '').trim().toLowerCase();
    const password = form.get('password') ?? '';
    const window = ctx.config.SIGNIN_WINDOW_SECONDS;
    const perAccount = await countAttempt(ctx.ledger, `signin:email:${sha256(email)}`, window);
    const perAddress = await countAttempt(ctx.ledger, `signin:addr:${clientAddress(event)}`, window);
    if (perAccount.count > ctx.config.SIGNIN_MAX_ATTEMPTS || perAddress.count > ctx.config.SIGNIN_MAX_ATTEMPTS_PER_ADDRESS) {
      const retry = Math.max(perAccount.retryAfter, perAddress.retryAfter);
      return formPage(
        event,
        'signin',
        429,
        `Too many sign-in attempts. Try again in ${Math.ceil(retry / 60)} minute(s).`,
        email,
        { 'retry-after': String(retry) },
        next,
      );
    }
    const login = EMAIL.test(email) ? await loginByEmail(ctx.ledger.read, email) : undefined;
    const ok = await verifyPassword(password, login?.password_hash ?? (await dummyHash()));
    if (!login || !ok) return formPage(event, 'signin', 401, 'That email and password do not match an account.', email, {}, next);
    return redirect(safeNext(next), await startSession(event, login.account_id));
  });

  // The static pages' header links here: signing out is a POST (with this page's token), never a GET.
  app.get('/signout', async (event) => {
    const session = await readSession(event, ctx);
    if (!session) return redirect('/signin', signedOutCookies(event, ctx));
    return page(
      htmlPage(
        'Sign out',
        `<h1>Sign out</h1><p>Signed in as ${escapeHtml(session.email)}.</p>
<form method="post" action="/signout">${csrfField(session.csrf)}<p><button type="submit">Sign out of this browser</button></p></form>
<form method="post" action="/signout-everywhere">${csrfField(session.csrf)}<p><button type="submit" class="secondary">Sign out everywhere</button></p></form>
<p><a href="/dashboard">Back to the dashboard</a></p>`,
        DASHBOARD_CSS,
        accountHeader(session),
      ),
    );
  });

  app.post('/signout', async (event) => {
    const form = await readForm(event, ctx);
    const session = await readSession(event, ctx);
    if (!session) return redirect('/signin', signedOutCookies(event, ctx));
    checkCsrf(event, ctx, form, session);
    await ctx.ledger.write((tx) => deleteSession(tx, sha256(sessionSecretOf(event, ctx)!)));
    return redirect('/signin?done=signed-out', signedOutCookies(event, ctx));
  });

  app.post('/signout-everywhere', async (event) => {
    const form = await readForm(event, ctx);
    const session = await readSession(event, ctx);
    if (!session) return redirect('/signin', signedOutCookies(event, ctx));
    checkCsrf(event, ctx, form, session);
    await ctx.ledger.write((tx) => deleteSessionsOf(tx, session.personId));
    return redirect('/signin?done=signed-out-everywhere', signedOutCookies(event, ctx));
  });

  // The reset token is in this page's URL: no request to another origin may carry it in a Referer.
  // (same-origin, not no-referrer: under no-referrer the form's own POST would go with Origin: null,
  // which the form's Origin check refuses.)
  const NO_REFERRER = { 'referrer-policy': 'same-origin' };
  const resetForm = (event: H3Event, token: string, status = 200, error?: string) => {
    const csrf = preSessionCsrf(event, ctx);
    return page(
      htmlPage(
        'Choose a new password',
        `<h1>Choose a new password</h1>${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/reset/${encodeURIComponent(token)}">${csrfField(csrf.token)}
<label for="password">New password (at least ${MIN_PASSWORD} characters)</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD}">
<p><button type="submit">Set the password</button></p></form>`,
        DASHBOARD_CSS,
      ),
      status,
      csrf.setCookie ? [csrf.setCookie] : [],
      NO_REFERRER,
    );
  };
  const gone = () =>
    page(
      htmlPage(
        'Link expired',
        '<h1>This link cannot be used</h1><p>It is unknown, used or expired. <a href="/forgot">Ask for a new one</a>.</p>',
      ),
      410,
      [],
      NO_REFERRER,
    );

  app.get('/reset/:token', async (event) => {
    const token = String(event.context.params?.token ?? '');
    return (await passwordResetValid(ctx.ledger.read, sha256(token), nowIso())) ? resetForm(event, token) : gone();
  });
  app.post('/reset/:token', async (event) => {
    const token = String(event.context.params?.token ?? '');
    const form = await readForm(event, ctx);
    checkCsrf(event, ctx, form, undefined);
    const password = form.get('password') ?? '';
    if (password.length < MIN_PASSWORD || password.length > 1024)
      return resetForm(event, token, 400, `The password needs at least ${MIN_PASSWORD} characters.`);
    const hash = await hashPassword(password);
    const done = await ctx.ledger.write(async (tx) => {
      const accountId = await consumePasswordReset(tx, sha256(token), nowIso());
      if (!accountId) return false;
      await setPassword(tx, accountId, hash);
      await deleteSessionsOf(tx, accountId);
      const login = await loginOfAccount(tx, accountId);
      if (login)
        await insertAuditEntry(tx, personalEntry({ personId: accountId, email: login.email }, 'person.password_reset', login.email));
      return true;
    });
    return done ? redirect('/signin?done=reset', signedOutCookies(event, ctx)) : gone();
  });
}

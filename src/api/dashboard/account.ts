/**
 * Account self-service, as plain forms that work without JavaScript:
 *   GET/POST /forgot                        "Forgot password?": a one-time link by mail (src/accounts/mail.ts)
 *   GET      /dashboard/account             spend cap, email, password, sessions, deletion
 *   POST     /dashboard/account/spend-cap   {spend_cap_usd}: the account's monthly spend cap (empty: none)
 *   POST     /dashboard/account/email       {email, password}
 *   POST     /dashboard/account/password    {current, password}: ends every other session
 *   POST     /dashboard/account/sessions/end {session}: ends one session
 *   GET/POST /dashboard/account/delete      asks first (password); then revokes every key, ends
 *                                           every way in, disables its webhook subscriptions,
 *                                           and keeps the public log as it is
 * Changes that need the password count against the same per-account limit as
 * sign-in, so this page is no faster a way to guess it.
 */
import type { H3Event } from 'h3';
import { hashPassword, verifyPassword } from '../../accounts/passwords.ts';
import { mailTransport } from '../../accounts/mail.ts';
import { countAttempt } from '../../accounts/throttle.ts';
import { nowIso } from '../../ids.ts';
import {
  accountOwner,
  deleteAccountAccess,
  deleteOtherSessions,
  deleteSessionOf,
  insertPasswordReset,
  loginByEmail,
  loginOfAccount,
  sessionsOf,
  setEmail,
  setPassword,
} from '../../ledger/accounts.ts';
import { keysChanged, revokeAccountKeys } from '../../ledger/api-keys.ts';
import { disableAccountSubscriptions } from '../../ledger/webhooks.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml as e, htmlPage } from '../html.ts';
import { clientAddress } from '../rate-limit.ts';
import type { Router } from '../router.ts';
import { personalEntry } from '../audit.ts';
import { insertAuditEntry } from '../../ledger/audit-log.ts';
import { accountsOnlyOwnedBy } from '../../ledger/members.ts';
import { allows } from '../../domain/team-roles.ts';
import { callApi, problemNote } from './pages.ts';
import { spendCapBody, spendCapSection } from './spend-cap-form.ts';
import { EMAIL, MIN_PASSWORD } from './signin.ts';
import { timeTag } from './when.ts';
import {
  DASHBOARD_CSS,
  checkCsrf,
  csrfField,
  dashboardPage,
  newSecret,
  page,
  preSessionCsrf,
  readForm,
  readSession,
  readSignedInForm,
  redirect,
  requireRole,
  sessionSecretOf,
  sha256,
  signedOutCookies,
  toSignin,
  type Session,
} from './web.ts';

/** A browser's user agent, shortened to what a person recognises. */
function browserOf(ua: string | null): string {
  if (!ua) return 'unknown browser';
  const name = /Edg\//.test(ua)
    ? 'Edge'
    : /Firefox\//.test(ua)
      ? 'Firefox'
      : /Chrome\/|Chromium\//.test(ua)
        ? 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : /curl\//.test(ua)
            ? 'curl'
            : 'a browser';
  const os = /Windows/.test(ua)
    ? 'Windows'
    : /Android/.test(ua)
      ? 'Android'
      : /iPhone|iPad/.test(ua)
        ? 'iOS'
        : /Mac OS X/.test(ua)
          ? 'macOS'
          : /Linux/.test(ua)
            ? 'Linux'
            : '';
  return os ? `${name} on ${os}` : name;
}

const DONE: Record<string, string> = {
  email: 'Saved: you now sign in with the new email.',
  password: 'Saved the new password. Every other session was signed out.',
  session: 'Signed that session out.',
  'spend-cap': 'Saved the spend cap.',
};

export function registerAccountPages(router: Router, ctx: AppContext): void {
  const app = router.app;
  const sendMail = mailTransport(ctx.config, ctx.log);
  const error = (text: string) => `<p class="error" role="alert">${e(text)}</p>`;

  /** Checks the account's password, counted against the sign-in limit; a message when it fails. */
  const passwordProblem = async (s: Session, password: string): Promise<string | undefined> => {
    const attempt = await countAttempt(ctx.ledger, `signin:email:${sha256(s.email)}`, ctx.config.SIGNIN_WINDOW_SECONDS);
    if (attempt.count > ctx.config.SIGNIN_MAX_ATTEMPTS)
      return `Too many password attempts. Try again in ${Math.ceil(attempt.retryAfter / 60)} minute(s).`;
    const login = await loginOfAccount(ctx.ledger.read, s.personId);
    return login && (await verifyPassword(password, login.password_hash)) ? undefined : 'That is not the current password.';
  };

  const accountPage = async (event: H3Event, s: Session, note = '', status = 200) => {
    const done = DONE[event.url.searchParams.get('done') ?? ''];
    const here = sha256(sessionSecretOf(event, ctx) ?? '');
    const [sessions, cap] = await Promise.all([
      sessionsOf(ctx.ledger.read, s.personId, nowIso()),
      callApi(app, ctx, { ...s, key: s.liveKey }, 'GET', '/v1/account/spend-cap'),
    ]);
    const rows = sessions
      .map((x) => {
        const end =
          x.secret_hash === here
            ? '<strong>this browser</strong>'
            : `<form method="post" action="/dashboard/account/sessions/end">${csrfField(s.csrf)}<input type="hidden" name="session" value="${e(x.secret_hash)}"><button type="submit" class="secondary" aria-label="Sign out ${e(browserOf(x.user_agent))}, since ${e(x.created_at)}">Sign out</button></form>`;
        return `<tr><td data-label="Browser">${e(browserOf(x.user_agent))}</td><td data-label="Signed in">${timeTag(x.created_at)}</td><td data-label="Until">${timeTag(x.expires_at)}</td><td data-label="Action">${end}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/account',
        'Account',
        `${note}${done ? `<p class="notice" role="status">${e(done)}</p>` : ''}
${spendCapSection(cap.body, '/dashboard/account/spend-cap', s.csrf, "all the account's keys together", 'account-cap', allows(s.role, 'owner') ? undefined : 'Only an owner of the account changes it (Members).')}
<p class="muted">A key may also have a cap of its own, on its page under <a href="/dashboard/keys">API keys</a>; an act must fit under both.</p>
<h2 id="email-h">Email</h2><p>You sign in as <strong>${e(s.email)}</strong>.</p>
<form method="post" action="/dashboard/account/email" aria-labelledby="email-h">${csrfField(s.csrf)}
<label for="new-email">New email</label><input id="new-email" name="email" type="email" autocomplete="email" required>
<label for="email-password">Current password</label><input id="email-password" name="password" type="password" autocomplete="current-password" required>
<p><button type="submit">Change the email</button></p></form>
<h2 id="password-h">Password</h2>
<form method="post" action="/dashboard/account/password" aria-labelledby="password-h">${csrfField(s.csrf)}
<input type="text" name="username" autocomplete="username" value="${e(s.email)}" hidden>
<label for="current-password">Current password</label><input id="current-password" name="current" type="password" autocomplete="current-password" required>
<label for="new-password">New password (at least ${MIN_PASSWORD} characters)</label><input id="new-password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD}">
<p><button type="submit">Change the password</button></p></form>
<h2>Sessions</h2><table class="cards-sm"><thead><tr><th scope="col">Browser</th><th scope="col">Signed in</th><th scope="col">Until</th><th scope="col">Action</th></tr></thead><tbody>${rows}</tbody></table>
<form method="post" action="/signout-everywhere">${csrfField(s.csrf)}<p><button type="submit" class="secondary">Sign out everywhere</button></p></form>
<p>Passkeys are on <a href="/dashboard/passkeys">Passkeys</a>.</p>
<h2>Delete the account</h2><p>Deleting revokes every key of the account at once and removes its sign-in, sessions and passkeys. Receipts already in the public log stay there and stay verifiable: the log is append-only (<a href="/docs/accounts#what-is-public">what the log shows</a>).</p>
${s.accountId === s.personId && allows(s.role, 'owner') ? '<p><a href="/dashboard/account/delete">Delete this account…</a></p>' : '<p class="muted">Only an owner deletes an account, from their own account.</p>'}`,
      ),
      status,
    );
  };

  app.get('/dashboard/account', async (event) => {
    const s = await readSession(event, ctx);
    return s ? accountPage(event, s) : toSignin(event);
  });

  app.post('/dashboard/account/spend-cap', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const r = await callApi(
      app,
      ctx,
      { ...p.session, key: p.session.liveKey },
      'POST',
      '/v1/account/spend-cap',
      spendCapBody(p.form.get('spend_cap_usd')),
    );
    return r.status === 200 ? redirect('/dashboard/account?done=spend-cap') : accountPage(event, p.session, problemNote(r), r.status);
  });

  app.post('/dashboard/account/email', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const email = (p.form.get('email') ?? '').trim().toLowerCase();
    if (!EMAIL.test(email)) return accountPage(event, p.session, error('Enter an email address such as you@example.com.'), 400);
    const wrong = await passwordProblem(p.session, p.form.get('password') ?? '');
    if (wrong) return accountPage(event, p.session, error(wrong), wrong.startsWith('Too many') ? 429 : 403);
    const ok = await ctx.ledger.write(async (tx) => {
      if (!(await setEmail(tx, p.session.personId, email))) return false;
      await insertAuditEntry(tx, personalEntry(p.session, 'person.email_changed', email, { from: p.session.email }));
      return true;
    });
    return ok
      ? redirect('/dashboard/account?done=email')
      : accountPage(event, p.session, error('That email cannot be used: another account signs in with it.'), 409);
  });

  app.post('/dashboard/account/password', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const next = p.form.get('password') ?? '';
    if (next.length < MIN_PASSWORD || next.length > 1024)
      return accountPage(event, p.session, error(`The new password needs at least ${MIN_PASSWORD} characters.`), 400);
    const wrong = await passwordProblem(p.session, p.form.get('current') ?? '');
    if (wrong) return accountPage(event, p.session, error(wrong), wrong.startsWith('Too many') ? 429 : 403);
    const hash = await hashPassword(next);
    const here = sha256(sessionSecretOf(event, ctx) ?? '');
    await ctx.ledger.write(async (tx) => {
      await setPassword(tx, p.session.personId, hash);
      await deleteOtherSessions(tx, p.session.personId, here);
      await insertAuditEntry(tx, personalEntry(p.session, 'person.password_changed', p.session.email));
    });
    return redirect('/dashboard/account?done=password');
  });

  app.post('/dashboard/account/sessions/end', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const ok = await ctx.ledger.write((tx) => deleteSessionOf(tx, p.session.personId, p.form.get('session') ?? ''));
    return ok
      ? redirect('/dashboard/account?done=session')
      : accountPage(event, p.session, error('No such session of this account (it may have ended already).'), 404);
  });

  const deletePage = (s: Session, note = '', status = 200) =>
    page(
      dashboardPage(
        s,
        '/dashboard/account',
        'Delete this account?',
        `${note}<p>This cannot be undone. At once:</p><ul><li>every key of the account is revoked (requests with them answer 401);</li><li>its sign-in, sessions, passkeys and reset links are removed, so nobody can sign in to it;</li><li>its alert and webhook subscriptions are disabled: nothing more is sent to them;</li><li>the email is free to sign up again, as a new account.</li></ul>
<p>What stays: receipts already in the public log, which stay verifiable, since the log is append-only and others may rely on them. They name fuse and key ids, never the email.</p>
<form method="post" action="/dashboard/account/delete">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes">
<input type="text" name="username" autocomplete="username" value="${e(s.email)}" hidden>
<label for="delete-password">Your password, to confirm</label><input id="delete-password" name="password" type="password" autocomplete="current-password" required>
<p><button type="submit" class="danger">Yes, delete the account</button> <a href="/dashboard/account">Cancel</a></p></form>`,
      ),
      status,
    );
  /**
   * Deleting an account deletes its owner's sign-in with it: a person deletes their own account
   * only, as its owner, and not while they are the only owner of another (it would be left with none).
   */
  const deletionRefusal = async (s: Session): Promise<string | undefined> => {
    if (s.accountId !== s.personId)
      return 'You can delete only your own account, and you are acting in another one: switch to your own account first (Members).';
    requireRole(s, 'owner', 'Deleting the account');
    const alone = await accountsOnlyOwnedBy(ctx.ledger.read, s.personId);
    const names = s.accounts.filter((m) => alone.includes(m.account_id)).map((m) => m.account_name);
    return alone.length
      ? `You are the only owner of ${names.join(', ') || 'another account'}: make someone else an owner there first, so it is not left without one.`
      : undefined;
  };
  app.get('/dashboard/account/delete', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    const refused = await deletionRefusal(s);
    return refused
      ? page(
          dashboardPage(
            s,
            '/dashboard/account',
            'Delete this account?',
            `${error(refused)}<p><a href="/dashboard/account">Back to the account</a></p>`,
          ),
          403,
        )
      : deletePage(s);
  });
  app.post('/dashboard/account/delete', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const refused = await deletionRefusal(p.session);
    if (refused)
      return page(
        dashboardPage(
          p.session,
          '/dashboard/account',
          'Delete this account?',
          `${error(refused)}<p><a href="/dashboard/account">Back to the account</a></p>`,
        ),
        403,
      );
    if (p.form.get('confirm') !== 'yes') return redirect('/dashboard/account/delete');
    const wrong = await passwordProblem(p.session, p.form.get('password') ?? '');
    if (wrong) return deletePage(p.session, error(wrong), wrong.startsWith('Too many') ? 429 : 403);
    const now = nowIso();
    const revoked = await ctx.ledger.write(async (tx) => {
      const n = await revokeAccountKeys(tx, p.session.accountId, now);
      await deleteAccountAccess(tx, p.session.accountId, now);
      // Its live side's subscriptions and its test side's (docs/test-mode.md).
      for (const test of [false, true]) await disableAccountSubscriptions(tx, accountOwner(p.session.accountId, test), now);
      return n;
    });
    keysChanged(ctx.ledger);
    ctx.log('info', 'account deleted', { account_id: p.session.accountId, keys_revoked: revoked });
    return page(
      htmlPage(
        'Account deleted',
        `<h1>Account deleted</h1><p>Its ${revoked} key(s) are revoked and nobody can sign in to it. Its receipts stay in the <a href="/logs">public log</a>.</p><p><a href="/">Home</a></p>`,
        DASHBOARD_CSS,
      ),
      200,
      signedOutCookies(event, ctx),
    );
  });

  // ------------------------------------------------------------ forgot password
  const forgotPage = (event: H3Event, status = 200, note = '', email = '') => {
    const csrf = preSessionCsrf(event, ctx);
    return page(
      htmlPage(
        'Forgot password',
        `<h1>Forgot your password?</h1>${note}<p>Enter the email you sign in with. If it has an account, a link to choose a new password is sent to it; the link works once, for ${Math.round(ctx.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes.</p>
<form method="post" action="/forgot">${csrfField(csrf.token)}
<label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${e(email)}">
<p><button type="submit">Send the link</button></p></form><p><a href="/signin">Back to sign in</a></p>`,
        DASHBOARD_CSS,
        undefined,
        'Forgot your Fuse Gate password? Get a one-time link by email to choose a new one.',
      ),
      status,
      csrf.setCookie ? [csrf.setCookie] : [],
    );
  };
  app.get('/forgot', async (event) => ((await readSession(event, ctx)) ? redirect('/dashboard/account') : forgotPage(event)));
  app.post('/forgot', async (event) => {
    const form = await readForm(event, ctx);
    checkCsrf(event, ctx, form, undefined);
    const email = (form.get('email') ?? '').trim().toLowerCase();
    if (!EMAIL.test(email)) return forgotPage(event, 400, error('Enter an email address such as you@example.com.'), email);
    const window = ctx.config.SIGNIN_WINDOW_SECONDS;
    const perAddress = await countAttempt(ctx.ledger, `forgot:addr:${clientAddress(event)}`, window);
    const perEmail = await countAttempt(ctx.ledger, `forgot:email:${sha256(email)}`, window);
    if (perAddress.count > ctx.config.SIGNUP_MAX_ATTEMPTS_PER_ADDRESS || perEmail.count > 3) {
      const retry = Math.max(perAddress.retryAfter, perEmail.retryAfter);
      return page(
        htmlPage(
          'Forgot password',
          `<h1>Forgot your password?</h1>${error(`Too many requests. Try again in ${Math.ceil(retry / 60)} minute(s).`)}`,
          DASHBOARD_CSS,
        ),
        429,
        [],
        { 'retry-after': String(retry) },
      );
    }
    const login = await loginByEmail(ctx.ledger.read, email);
    if (login) {
      const token = newSecret();
      const expiresAt = nowIso(new Date(Date.now() + ctx.config.PASSWORD_RESET_TTL_SECONDS * 1000));
      await ctx.ledger.write((tx) => insertPasswordReset(tx, { tokenHash: sha256(token), accountId: login.account_id, expiresAt }));
      const link = `${ctx.config.BASE_URL}/reset/${token}`;
      // Not awaited: the answer takes the same time whether or not the email has an account.
      void sendMail({
        to: email,
        subject: 'Choose a new Fuse Gate password',
        text: `Someone (we hope you) asked to reset the password of the Fuse Gate account ${email}.\n\nChoose a new password here, once, until ${expiresAt}:\n${link}\n\nIt signs every session out. If you did not ask, ignore this mail: the password stays as it is.\n`,
      }).catch((err: unknown) => ctx.log('error', 'password-reset mail not sent', { error: String(err) }));
    }
    return page(
      htmlPage(
        'Check your mail',
        `<h1>Check your mail</h1><p role="status">If an account signs in with ${e(email)}, a link to choose a new password is on its way. It works once, for ${Math.round(ctx.config.PASSWORD_RESET_TTL_SECONDS / 60)} minutes.</p><p><a href="/signin">Back to sign in</a></p>`,
        DASHBOARD_CSS,
      ),
    );
  });
}

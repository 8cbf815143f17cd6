/**
 * Passkeys (WebAuthn) with @simplewebauthn/server, which does every
 * cryptographic check (challenge, origin, RP id hash, signature, counter):
 *   GET  /dashboard/passkeys          the account's passkeys and "Add a passkey"
 *   POST /passkeys/register/options   signed in: creation options (challenge kept once)
 *   POST /passkeys/register/verify    signed in: stores the verified credential
 *   POST /passkeys/signin/options     request options (discoverable credentials)
 *   POST /passkeys/signin/verify      verifies the assertion, then signs in
 * The ceremony needs the browser's WebAuthn API, so these pages use a small
 * script; password sign-in keeps working without it. The JSON calls are
 * guarded like forms: our Origin, and the page's CSRF token in X-CSRF-Token.
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { HTTPResponse, type H3Event } from 'h3';
import { z } from 'zod';
import { countAttempt } from '../../accounts/throttle.ts';
import { nowIso } from '../../ids.ts';
import {
  consumeChallenge,
  deletePasskey,
  getPasskey,
  insertChallenge,
  insertPasskey,
  insertSession,
  passkeyUsed,
  passkeysOf,
  renamePasskey,
} from '../../ledger/accounts.ts';
import { readBody } from '../body.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml } from '../html.ts';
import { Problem } from '../problem.ts';
import { clientAddress } from '../rate-limit.ts';
import { reply, toResponse } from '../reply.ts';
import type { Router } from '../router.ts';
import {
  checkOrigin,
  cookie,
  csrfField,
  dashboardPage,
  newSecret,
  page,
  readSession,
  readSignedInForm,
  redirect,
  safeNext,
  sha256,
  signedInCookies,
  toSignin,
  type Session,
} from './web.ts';

const CHALLENGE_TTL_MS = 5 * 60_000;
const credentialJson = z.looseObject({
  id: z.string().min(1).max(1024),
  response: z.looseObject({ clientDataJSON: z.string().max(8192) }),
});

/** A passkey's name from the ceremony's query: trimmed, at most 60 characters, or null. */
const passkeyName = (v: string | null) => (v ?? '').trim().slice(0, 60) || null;

const refused = (detail: string, status = 400, code = 'passkey_refused') =>
  new Problem({ status, code, title: status === 401 ? 'Unauthorized' : 'Bad request', detail });

/** The challenge the browser signed, read from clientDataJSON (the library checks it again). */
function challengeOf(clientDataJSON: string): string {
  try {
    const c = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown };
    if (typeof c.challenge === 'string') return c.challenge;
  } catch {
    /* answered below */
  }
  throw refused('clientDataJSON carries no challenge');
}

/** The script of the passkey buttons: WebAuthn's JSON forms in and out, nothing else. */
export const PASSKEY_SCRIPT = `<script>
(() => {
  const button = document.getElementById('passkey');
  const status = document.getElementById('passkey-status');
  if (!button || !window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) return;
  button.hidden = false;
  const csrf = document.querySelector('input[name=csrf]').value;
  const post = (url, body) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': csrf }, body: JSON.stringify(body ?? {}) })
    .then((r) => r.json().then((j) => ({ ok: r.ok, j })));
  button.addEventListener('click', async () => {
    const kind = button.dataset.kind;
    try {
      const o = await post('/passkeys/' + kind + '/options');
      if (!o.ok) throw new Error(o.j.detail);
      const cred = kind === 'register'
        ? await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(o.j) })
        : await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(o.j) });
      const next = document.querySelector('input[name=next]');
      const name = document.getElementById('passkey-name');
      const query = kind === 'signin' ? (next ? '?next=' + encodeURIComponent(next.value) : '') : (name && name.value ? '?name=' + encodeURIComponent(name.value) : '');
      const v = await post('/passkeys/' + kind + '/verify' + query, cred.toJSON());
      if (!v.ok) throw new Error(v.j.detail);
      location.href = v.j.redirect;
    } catch (e) {
      status.textContent = 'The passkey did not work: ' + e.message;
    }
  });
})();
</script>`;

export function registerPasskeyRoutes(router: Router, ctx: AppContext): void {
  // Pages and browser calls, not API operations: registered on the app, outside the API description.
  const app = router.app;
  const rpID = ctx.config.WEBAUTHN_RP_ID ?? new URL(ctx.config.BASE_URL).hostname;
  /** Origins a ceremony may come from: BASE_URL's, or this request's own when it is on the RP id's host. */
  const origins = (event: H3Event) => [
    ...new Set([new URL(ctx.config.BASE_URL).origin, ...(event.url.hostname === rpID ? [event.url.origin] : [])]),
  ];
  const csrfHeader = (event: H3Event) => event.req.headers.get('x-csrf-token') ?? '';
  const guardSigned = async (event: H3Event): Promise<Session> => {
    checkOrigin(event, ctx);
    const s = await readSession(event, ctx);
    if (!s) throw refused('sign in first', 401, 'not_signed_in');
    if (csrfHeader(event) !== s.csrf)
      throw new Problem({
        status: 403,
        code: 'csrf_refused',
        title: 'Forbidden',
        detail: 'the X-CSRF-Token header does not match this session',
      });
    return s;
  };
  const guardPublic = (event: H3Event) => {
    checkOrigin(event, ctx);
    const expected = cookie(
      event,
      event.url.protocol === 'https:' || ctx.config.BASE_URL.startsWith('https:') ? '__Host-fg_csrf' : 'fg_csrf',
    );
    if (!expected || csrfHeader(event) !== expected)
      throw new Problem({
        status: 403,
        code: 'csrf_refused',
        title: 'Forbidden',
        detail: 'the X-CSRF-Token header does not match the sign-in page',
      });
  };
  const expires = () => nowIso(new Date(Date.now() + CHALLENGE_TTL_MS));

  const passkeysPage = async (event: H3Event, s: Session, note = '', status = 200) => {
    const keys = await passkeysOf(ctx.ledger.read, s.personId);
    const done = { removed: 'Removed the passkey: it can no longer sign in.', renamed: 'Renamed the passkey.' }[
      event.url.searchParams.get('done') ?? ''
    ];
    const rows = keys
      .map((k, i) => {
        const id = escapeHtml(k.credential_id);
        const name = escapeHtml(k.name ?? `Passkey ${i + 1}`);
        return `<tr><td data-label="Passkey"><form method="post" action="/dashboard/passkeys/rename" class="row">${csrfField(s.csrf)}<input type="hidden" name="credential_id" value="${id}">
<p><label for="pk-${i}">Name</label><input id="pk-${i}" name="name" maxlength="60" required value="${name}"></p><p><button type="submit" class="secondary">Rename</button></p></form>
<code>${escapeHtml(k.credential_id.slice(0, 16))}…</code></td><td data-label="Added">${escapeHtml(k.created_at)}</td><td data-label="Last used">${escapeHtml(k.last_used_at ?? 'never')}</td>
<td data-label="Actions"><a href="/dashboard/passkeys/remove?credential_id=${encodeURIComponent(k.credential_id)}" aria-label="Remove ${name}">Remove…</a></td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/passkeys',
        'Passkeys',
        `${note}${done ? `<p class="notice" role="status">${done}</p>` : ''}${keys.length ? `<table class="cards-sm"><thead><tr><th scope="col">Passkey</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No passkey yet: sign in with your password, or add one.</p>'}
<h2>Add a passkey</h2><label for="passkey-name">Name it (e.g. the device)</label><input id="passkey-name" name="passkey_name" maxlength="60" value="This device">
<p><button type="button" id="passkey" data-kind="register" hidden>Add a passkey</button></p><p id="passkey-status" role="status"></p>
<noscript><p>Adding a passkey needs JavaScript (the browser's WebAuthn API).</p></noscript>${PASSKEY_SCRIPT}`,
      ),
      status,
    );
  };
  app.get('/dashboard/passkeys', async (event) => {
    const s = await readSession(event, ctx);
    return s ? passkeysPage(event, s) : toSignin(event);
  });
  app.post('/dashboard/passkeys/rename', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const name = (p.form.get('name') ?? '').trim();
    if (!name || name.length > 60)
      return passkeysPage(event, p.session, '<p class="error" role="alert">Name: 1 to 60 characters.</p>', 400);
    const ok = await ctx.ledger.write((tx) => renamePasskey(tx, p.session.personId, p.form.get('credential_id') ?? '', name));
    return ok
      ? redirect('/dashboard/passkeys?done=renamed')
      : passkeysPage(event, p.session, '<p class="error" role="alert">No such passkey in this account.</p>', 404);
  });
  app.get('/dashboard/passkeys/remove', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    const id = event.url.searchParams.get('credential_id') ?? '';
    const k = (await passkeysOf(ctx.ledger.read, s.personId)).find((x) => x.credential_id === id);
    if (!k) return passkeysPage(event, s, '<p class="error" role="alert">No such passkey in this account.</p>', 404);
    return page(
      dashboardPage(
        s,
        '/dashboard/passkeys',
        'Remove this passkey?',
        `<p>Removing <strong>${escapeHtml(k.name ?? 'this passkey')}</strong> (<code>${escapeHtml(id.slice(0, 16))}…</code>) means it can no longer sign in to this account. Your password keeps working.</p>
<form method="post" action="/dashboard/passkeys/remove">${csrfField(s.csrf)}<input type="hidden" name="credential_id" value="${escapeHtml(id)}"><input type="hidden" name="confirm" value="yes">
<p><button type="submit" class="danger">Yes, remove it</button> <a href="/dashboard/passkeys">Cancel</a></p></form>`,
      ),
    );
  });
  app.post('/dashboard/passkeys/remove', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const id = p.form.get('credential_id') ?? '';
    if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/passkeys/remove?credential_id=${encodeURIComponent(id)}`);
    const ok = await ctx.ledger.write((tx) => deletePasskey(tx, p.session.personId, id));
    return ok
      ? redirect('/dashboard/passkeys?done=removed')
      : passkeysPage(event, p.session, '<p class="error" role="alert">No such passkey in this account.</p>', 404);
  });

  app.post('/passkeys/register/options', async (event) => {
    const s = await guardSigned(event);
    const existing = await passkeysOf(ctx.ledger.read, s.personId);
    const options = await generateRegistrationOptions({
      rpName: 'Fuse Gate',
      rpID,
      userName: s.email,
      userID: new TextEncoder().encode(s.personId),
      attestationType: 'none',
      excludeCredentials: existing.map((k) => ({ id: k.credential_id })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    await ctx.ledger.write((tx) =>
      insertChallenge(tx, { challenge: options.challenge, kind: 'register', accountId: s.personId, expiresAt: expires() }),
    );
    return toResponse(reply(options));
  });

  app.post('/passkeys/register/verify', async (event) => {
    const s = await guardSigned(event);
    const body = (await readBody(event, credentialJson, ctx.config.MAX_BODY_BYTES)) as unknown as RegistrationResponseJSON;
    const challenge = challengeOf(body.response.clientDataJSON);
    if (!(await ctx.ledger.write((tx) => consumeChallenge(tx, challenge, 'register', s.personId, nowIso()))))
      throw refused('the challenge is unknown, used or expired: start again');
    let v;
    try {
      v = await verifyRegistrationResponse({
        response: body,
        expectedChallenge: challenge,
        expectedOrigin: origins(event),
        expectedRPID: rpID,
        requireUserVerification: false,
      });
    } catch (e) {
      throw refused(`the passkey could not be verified: ${(e as Error).message}`);
    }
    if (!v.verified) throw refused('the passkey could not be verified');
    const c = v.registrationInfo.credential;
    await ctx.ledger.write((tx) =>
      insertPasskey(tx, {
        credential_id: c.id,
        account_id: s.personId,
        public_key: Buffer.from(c.publicKey).toString('base64url'),
        counter: c.counter,
        transports: c.transports ?? [],
        name: passkeyName(event.url.searchParams.get('name')),
        created_at: nowIso(),
      }),
    );
    return toResponse(reply({ ok: true, redirect: '/dashboard/passkeys' }));
  });

  app.post('/passkeys/signin/options', async (event) => {
    guardPublic(event);
    const perAddress = await countAttempt(ctx.ledger, `signin:addr:${clientAddress(event)}`, ctx.config.SIGNIN_WINDOW_SECONDS);
    if (perAddress.count > ctx.config.SIGNIN_MAX_ATTEMPTS_PER_ADDRESS) {
      throw new Problem({
        status: 429,
        code: 'rate_limited',
        title: 'Too many requests',
        detail: 'too many sign-in attempts from this address',
        headers: { 'retry-after': String(perAddress.retryAfter) },
      });
    }
    const options = await generateAuthenticationOptions({ rpID, userVerification: 'preferred' });
    await ctx.ledger.write((tx) =>
      insertChallenge(tx, { challenge: options.challenge, kind: 'signin', accountId: null, expiresAt: expires() }),
    );
    return toResponse(reply(options));
  });

  app.post('/passkeys/signin/verify', async (event) => {
    guardPublic(event);
    const body = (await readBody(event, credentialJson, ctx.config.MAX_BODY_BYTES)) as unknown as AuthenticationResponseJSON;
    const challenge = challengeOf(body.response.clientDataJSON);
    if (!(await ctx.ledger.write((tx) => consumeChallenge(tx, challenge, 'signin', null, nowIso()))))
      throw refused('the challenge is unknown, used or expired: start again');
    const passkey = await getPasskey(ctx.ledger.read, body.id);
    if (!passkey) throw refused('this passkey is not registered here', 401);
    let v;
    try {
      v = await verifyAuthenticationResponse({
        response: body,
        expectedChallenge: challenge,
        expectedOrigin: origins(event),
        expectedRPID: rpID,
        credential: {
          id: passkey.credential_id,
          publicKey: Buffer.from(passkey.public_key, 'base64url'),
          counter: passkey.counter,
          transports: passkey.transports as never,
        },
        requireUserVerification: false,
      });
    } catch (e) {
      throw refused(`the passkey could not be verified: ${(e as Error).message}`, 401);
    }
    if (!v.verified) throw refused('the passkey could not be verified', 401);
    const secret = newSecret();
    const now = new Date();
    await ctx.ledger.write(async (tx) => {
      await passkeyUsed(tx, passkey.credential_id, v.authenticationInfo.newCounter, nowIso(now));
      await insertSession(tx, {
        secretHash: sha256(secret),
        accountId: passkey.account_id,
        now: nowIso(now),
        expiresAt: nowIso(new Date(now.getTime() + ctx.config.SESSION_TTL_SECONDS * 1000)),
        userAgent: event.req.headers.get('user-agent') ?? undefined,
      });
    });
    const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    for (const c of signedInCookies(event, ctx, secret)) headers.append('set-cookie', c);
    return new HTTPResponse(JSON.stringify({ ok: true, redirect: safeNext(event.url.searchParams.get('next')) }), { status: 200, headers });
  });
}

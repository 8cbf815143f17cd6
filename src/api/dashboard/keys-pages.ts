/**
 * The dashboard's keys, done the way people expect from key services:
 *   GET  /dashboard/keys                   the account's keys, and "Create a key"
 *   POST /dashboard/keys                   creates, then 303 to the list (reloading never creates twice)
 *   GET  /dashboard/keys/{id}              one key: hop limit, act kinds, spend cap and expiry, editable
 *   POST /dashboard/keys/{id}/limit        sets the hop limit (and period)
 *   POST /dashboard/keys/{id}/surface      sets the act kinds it may act on (its declared surface)
 *   POST /dashboard/keys/{id}/spend-cap    sets or clears its monthly spend cap
 *   POST /dashboard/keys/{id}/expiry       sets or clears the expiry
 *   GET/POST /dashboard/keys/{id}/rotate   asks first, then a new secret (shown once)
 *   GET/POST /dashboard/keys/{id}/revoke   asks first, then revokes
 * A new secret crosses the redirect in a sealed one-time cookie (web.ts
 * `flashCookie`) and is shown once, with a copy button; the list names each
 * key with its prefix, so two keys of one name stay apart. Every action is the
 * operator API call (`/v1/keys...`), dispatched in-process as the dashboard key.
 */
import type { H3Event } from 'h3';
import { HOP_PERIODS } from '../../domain/quota.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml as e } from '../html.ts';
import type { Router } from '../router.ts';
import { callApi, problemNote, type ApiAnswer } from './pages.ts';
import { PUBLIC_LOG_NOTE } from './signin.ts';
import { spendCapBody, spendCapSection } from './spend-cap-form.ts';
import { timeTag } from './when.ts';
import { allows } from '../../domain/team-roles.ts';
import {
  csrfField,
  dashboardPage,
  doneNotice,
  flashCookie,
  listedKey,
  page,
  readSession,
  readSignedInForm,
  redirect,
  takeFlash,
  toSignin,
  type Session,
} from './web.ts';

type KeyRow = Record<string, string | number | null>;

/** What a created or rotated key's one-time flash carries. */
export interface NewSecret {
  kind: 'created' | 'rotated';
  id: string;
  name: string;
  role: string;
  secret: string;
  fuse_id?: string;
}

/** The copy button: progressive, the secret stays selectable text without JavaScript. */
export const COPY_SCRIPT = `<script>
document.querySelectorAll('button[data-copy]').forEach((b) => {
  b.hidden = false;
  b.addEventListener('click', async () => {
    const text = document.getElementById(b.dataset.copy).textContent;
    try { await navigator.clipboard.writeText(text); b.textContent = 'Copied'; }
    catch { getSelection().selectAllChildren(document.getElementById(b.dataset.copy)); b.textContent = 'Selected: press Ctrl+C'; }
  });
});
</script>`;

/** The panel that shows a new secret once. */
export function secretPanel(n: NewSecret): string {
  const what = n.kind === 'created' ? `Created the ${e(n.role)} key` : 'Rotated the key';
  // Focus moves to the panel, so a keyboard or screen reader lands on the secret before anything else.
  return `<div class="notice" role="status" id="secret-panel" tabindex="-1"><p>${what} <strong>${e(n.name)}</strong> (<code>${e(n.id)}</code>). Its secret is shown this once: store it now.</p>
<p class="secret"><code id="new-secret" style="user-select:all">${e(n.secret)}</code> <button type="button" data-copy="new-secret" hidden>Copy</button></p></div><script>document.getElementById('secret-panel').focus()</script>`;
}

/** The key's act kinds, and the form that declares them (a hop naming another kind is a BLOCK). */
function surfaceForm(k: KeyRow, csrf: string): string {
  const surface = k.surface as unknown as { kinds: string[]; declared: boolean };
  const kid = e(String(k.id));
  return `<h2>Act kinds</h2><p>${
    surface.declared
      ? 'Declared for this key: a hop must name one of these kinds; any other is refused (BLOCK).'
      : 'The default: every kind of the agentic, hiring and insurance presets. A hop may also name no kind. Declare the kinds this agent acts on to refuse everything else.'
  }</p>
<p class="kinds">${surface.kinds.map((x) => `<code>${e(x)}</code>`).join(' ')}</p>
<form method="post" action="/dashboard/keys/${kid}/surface">${csrfField(csrf)}<div class="row">
<p><label for="kinds">Act kinds, separated by commas (letters, digits, _)</label><input id="kinds" name="kinds" value="${surface.declared ? e(surface.kinds.join(', ')) : ''}" placeholder="pay, refund"></p>
<p><button type="submit">Declare these kinds</button>${surface.declared ? ` <button type="submit" name="default" value="1" class="secondary">Use the default</button>` : ''}</p></div></form>`;
}

const keyLabel = (k: KeyRow) => `${e(String(k.name))} (${e(String(k.prefix))}…)`;
const DONE: Record<string, string> = {
  revoked: 'Revoked the key: it answers 401 from now on.',
  limit: 'Saved the hop limit.',
  surface: 'Saved the act kinds.',
  'spend-cap': 'Saved the spend cap.',
  expiry: 'Saved the expiry.',
};

export function registerKeyPages(router: Router, ctx: AppContext): void {
  const app = router.app;
  const posted = (event: H3Event) => readSignedInForm(event, ctx);
  const id = (event: H3Event) => String(event.context.params?.key_id ?? '');
  const getKey = (s: Session, keyId: string) => callApi(app, ctx, s, 'GET', `/v1/keys/${encodeURIComponent(keyId)}`);

  const keysPage = async (event: H3Event, s: Session, note = '', status = 200) => {
    const list = await callApi(app, ctx, s, 'GET', '/v1/keys');
    const keys = (list.body.data ?? []) as KeyRow[];
    const flash = takeFlash<NewSecret>(event, ctx);
    const manages = allows(s.role, 'operator');
    const created = event.url.searchParams.get('created');
    if (flash.data && flash.data.id === created) note += secretPanel(flash.data);
    else if (created)
      note += `<p class="muted" role="status">The secret of <code>${e(created)}</code> was shown once. Lost it? Rotate the key for a new one.</p>`;
    note += doneNotice(event, DONE);
    // The dashboard's own key acts for the signed-in session and has no secret anyone holds: it is not a key to manage here.
    const rows = keys
      .filter((k) => listedKey(s, k))
      .map((k) => {
        const kid = e(String(k.id));
        const actions = !manages
          ? ''
          : k.status === 'active'
            ? `<span class="actions"><a href="/dashboard/keys/${kid}" aria-label="Edit ${keyLabel(k)}">Edit</a> <a href="/dashboard/keys/${kid}/rotate" aria-label="Rotate ${keyLabel(k)}">Rotate…</a> <a href="/dashboard/keys/${kid}/revoke" aria-label="Revoke ${keyLabel(k)}">Revoke…</a></span>`
            : k.status === 'expired'
              ? `<a href="/dashboard/keys/${kid}" aria-label="Edit ${keyLabel(k)}">Edit</a>`
              : '';
        return `<tr><td data-label="Key">${e(String(k.name))} <code>${e(String(k.prefix))}…</code><br><code>${kid}</code></td><td data-label="Status"><strong>${e(String(k.status))}</strong></td><td data-label="Role">${e(String(k.role))}</td><td data-label="Hops this period">${k.hops_used} / ${k.hop_limit} per ${e(String(k.hop_period))}</td><td data-label="Expires">${timeTag(k.expires_at as string | null)}</td><td data-label="Last used">${timeTag(k.last_used_at as string | null)}</td><td data-label="Actions">${actions}</td></tr>`;
      })
      .join('');
    const role = event.url.searchParams.get('role') === 'operator' ? 'operator' : 'agent';
    const create = manages
      ? `<h2>Create a key</h2><p class="muted">${
          s.mode === 'test'
            ? 'Test mode is on: this makes a <strong>test key</strong> (<code>fg_test_…</code>), decided as a live one and billed nothing. Switch test mode off to make a live key.'
            : 'This makes a <strong>live key</strong> (<code>fg_live_…</code>), billed as it acts. Switch test mode on to make a test key.'
        }</p><form method="post" action="/dashboard/keys">${csrfField(s.csrf)}
<label for="key-name">Name</label><input id="key-name" name="name" required maxlength="100">
<label for="key-role">Role</label><select id="key-role" name="role"><option value="agent"${role === 'agent' ? ' selected' : ''}>agent: acts, may blow a fuse, never revives one</option><option value="operator"${role === 'operator' ? ' selected' : ''}>operator: also manages (creates fuses, keys; revives)</option></select>
<label for="key-limit">Hop limit per ${ctx.config.HOP_LIMIT_PERIOD} (empty: the default, ${ctx.config.HOP_LIMIT_DEFAULT})</label><input id="key-limit" name="hop_limit" inputmode="numeric" pattern="[0-9]{1,12}">
<label for="key-days">Expires after this many days (empty: never)</label><input id="key-days" name="expires_in_days" inputmode="numeric" pattern="[0-9]{1,4}">
<p><button type="submit">Create key</button></p></form>`
      : '<p class="muted">An operator or owner of the account creates, rotates and revokes keys.</p>';
    return page(
      dashboardPage(
        s,
        '/dashboard/keys',
        'API keys',
        `${note}${rows ? `<table class="keys cards-sm"><thead><tr><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Role</th><th scope="col">Hops this period</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No keys yet: create one below.</p>'}${
          list.body.has_more
            ? `<p class="muted">The ${keys.length} oldest keys are shown; list the rest with <code>GET /v1/keys?starting_after=${e(String(keys.at(-1)?.id))}</code>.</p>`
            : ''
        }
${create}
<p class="muted">The same as <code>POST /v1/keys</code> with an operator key. To follow <a href="/start">Get started</a> as printed, make an operator key: an agent key cannot create fuses.</p>
${PUBLIC_LOG_NOTE}${COPY_SCRIPT}`,
      ),
      status,
      flash.clear,
    );
  };

  /** A whole number from a form field: undefined when empty, null when not a number in 1..max. */
  const whole = (v: string | null, max: number): number | undefined | null => {
    const t = (v ?? '').trim();
    if (t === '') return undefined;
    return /^\d{1,12}$/.test(t) && Number(t) >= 1 && Number(t) <= max ? Number(t) : null;
  };
  const invalid = (detail: string): ApiAnswer => ({ status: 400, body: { detail } });

  app.get('/dashboard/keys', async (event) => {
    const s = await readSession(event, ctx);
    return s ? keysPage(event, s) : toSignin(event);
  });
  app.post('/dashboard/keys', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const hopLimit = whole(p.form.get('hop_limit'), 1e12);
    const days = whole(p.form.get('expires_in_days'), 3650);
    if (hopLimit === null)
      return keysPage(event, p.session, problemNote(invalid('Hop limit: enter a whole number of hops, such as 10000.')), 400);
    if (days === null)
      return keysPage(event, p.session, problemNote(invalid('Expiry: enter a number of days from 1 to 3650, or leave it empty.')), 400);
    const created = await callApi(app, ctx, p.session, 'POST', '/v1/keys', {
      name: p.form.get('name') ?? '',
      role: p.form.get('role') ?? 'agent',
      ...(hopLimit !== undefined ? { hop_limit: hopLimit } : {}),
      ...(days !== undefined ? { expires_in_seconds: days * 86_400 } : {}),
    });
    if (created.status !== 201) return keysPage(event, p.session, problemNote(created), created.status);
    const b = created.body;
    const flash: NewSecret = { kind: 'created', id: String(b.id), name: String(b.name), role: String(b.role), secret: String(b.secret) };
    return redirect(`/dashboard/keys?created=${encodeURIComponent(flash.id)}`, [flashCookie(event, ctx, flash)]);
  });

  // ------------------------------------------------------------ one key: limit and expiry
  const keyPage = async (event: H3Event, s: Session, keyId: string, note = '', status = 200) => {
    const r = await getKey(s, keyId);
    if (r.status !== 200)
      return page(
        dashboardPage(s, '/dashboard/keys', 'No such key', `${problemNote(r)}<p><a href="/dashboard/keys">All keys</a></p>`),
        r.status,
      );
    const k = r.body as KeyRow;
    const kid = e(String(k.id));
    const flash = takeFlash<NewSecret>(event, ctx);
    if (flash.data && flash.data.id === k.id && event.url.searchParams.get('rotated') === '1') note += secretPanel(flash.data);
    note += doneNotice(event, DONE);
    const dashboard = s.dashboardKeyIds.includes(String(k.id));
    const period = String(k.hop_period);
    return page(
      dashboardPage(
        s,
        '/dashboard/keys',
        `Key ${String(k.name)}`,
        `${note}<dl><dt>Id</dt><dd><code>${kid}</code></dd><dt>Prefix</dt><dd><code>${e(String(k.prefix))}…</code></dd><dt>Role</dt><dd>${e(String(k.role))}</dd><dt>Status</dt><dd><strong>${e(String(k.status))}</strong></dd>
<dt>Hops this period</dt><dd>${k.hops_used} / ${k.hop_limit} per ${e(period)} (starts again ${timeTag(k.resets_at as string | null, 'when the period ends')})</dd>
<dt>Spent this month</dt><dd>${e(String(k.spent_this_month_usd))} USD${k.spend_cap_usd == null ? ' (no cap)' : ` of a ${e(String(k.spend_cap_usd))} USD cap`}</dd><dt>Expires</dt><dd>${timeTag(k.expires_at as string | null)}</dd>
<dt>Created</dt><dd>${timeTag(k.created_at as string)}</dd><dt>Last used</dt><dd>${timeTag(k.last_used_at as string | null)}</dd></dl>
${
  !allows(s.role, 'operator')
    ? '<p class="muted">An operator or owner of the account changes keys.</p>'
    : k.status === 'revoked'
      ? '<p class="muted">A revoked key cannot be changed.</p>'
      : `<h2>Hop limit</h2><form method="post" action="/dashboard/keys/${kid}/limit">${csrfField(s.csrf)}<div class="row">
<p><label for="lim">Hops per period</label><input id="lim" name="hop_limit" required inputmode="numeric" pattern="[0-9]{1,12}" value="${k.hop_limit}"></p>
<p><label for="per">Period</label><select id="per" name="hop_period">${HOP_PERIODS.map((x) => `<option value="${x}"${x === period ? ' selected' : ''}>${x}</option>`).join('')}</select></p>
<p><button type="submit">Save the limit</button></p></div></form>
${surfaceForm(k, s.csrf)}
${spendCapSection(k, `/dashboard/keys/${kid}/spend-cap`, s.csrf, 'this key', 'key-cap')}
<p class="muted">The account may have a cap of its own, for all its keys together: see <a href="/dashboard/account#account-cap-h">Account</a>.</p>
${
  dashboard
    ? '<p class="muted">The dashboard key lasts as long as the account.</p>'
    : `<h2>Expiry</h2><form method="post" action="/dashboard/keys/${kid}/expiry">${csrfField(s.csrf)}<div class="row">
<p><label for="exp">Expires after this many days from now (empty: never)</label><input id="exp" name="expires_in_days" inputmode="numeric" pattern="[0-9]{1,4}"></p>
<p><button type="submit">Save the expiry</button></p></div></form>
<h2>Rotate or revoke</h2><p class="actions"><a href="/dashboard/keys/${kid}/rotate">Rotate…</a> <a href="/dashboard/keys/${kid}/revoke">Revoke…</a></p>`
}`
}
<p><a href="/dashboard/keys">All keys</a></p>${COPY_SCRIPT}`,
      ),
      status,
      flash.clear,
    );
  };
  app.get('/dashboard/keys/:key_id', async (event) => {
    const s = await readSession(event, ctx);
    return s ? keyPage(event, s, id(event)) : toSignin(event);
  });
  app.post('/dashboard/keys/:key_id/limit', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const n = whole(p.form.get('hop_limit'), 1e12);
    if (n === undefined || n === null)
      return keyPage(event, p.session, id(event), problemNote(invalid('Hop limit: enter a whole number of hops, such as 10000.')), 400);
    const periodField = p.form.get('hop_period');
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/keys/${encodeURIComponent(id(event))}/limit`, {
      hop_limit: n,
      ...(periodField ? { hop_period: periodField } : {}),
    });
    return r.status === 200
      ? redirect(`/dashboard/keys/${encodeURIComponent(id(event))}?done=limit`)
      : keyPage(event, p.session, id(event), problemNote(r), r.status);
  });
  app.post('/dashboard/keys/:key_id/surface', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const kinds = String(p.form.get('kinds') ?? '')
      .split(/[\s,]+/)
      .filter(Boolean);
    const body = p.form.get('default') === '1' ? { default: true } : { kinds };
    if (!('default' in body) && kinds.length === 0)
      return keyPage(
        event,
        p.session,
        id(event),
        problemNote(invalid('Act kinds: list at least one, such as pay, refund; or use the default.')),
        400,
      );
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/keys/${encodeURIComponent(id(event))}/surface`, body);
    return r.status === 200
      ? redirect(`/dashboard/keys/${encodeURIComponent(id(event))}?done=surface`)
      : keyPage(event, p.session, id(event), problemNote(r), r.status);
  });
  app.post('/dashboard/keys/:key_id/spend-cap', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const r = await callApi(
      app,
      ctx,
      p.session,
      'POST',
      `/v1/keys/${encodeURIComponent(id(event))}/spend-cap`,
      spendCapBody(p.form.get('spend_cap_usd')),
    );
    return r.status === 200
      ? redirect(`/dashboard/keys/${encodeURIComponent(id(event))}?done=spend-cap`)
      : keyPage(event, p.session, id(event), problemNote(r), r.status);
  });
  app.post('/dashboard/keys/:key_id/expiry', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const days = whole(p.form.get('expires_in_days'), 3650);
    if (days === null)
      return keyPage(
        event,
        p.session,
        id(event),
        problemNote(invalid('Expiry: enter a number of days from 1 to 3650, or leave it empty for never.')),
        400,
      );
    const r = await callApi(
      app,
      ctx,
      p.session,
      'POST',
      `/v1/keys/${encodeURIComponent(id(event))}/expiry`,
      days === undefined ? { expires_at: null } : { expires_in_seconds: days * 86_400 },
    );
    return r.status === 200
      ? redirect(`/dashboard/keys/${encodeURIComponent(id(event))}?done=expiry`)
      : keyPage(event, p.session, id(event), problemNote(r), r.status);
  });

  // ------------------------------------------------------------ rotate and revoke, each after a confirmation
  const confirmPage = async (s: Session, keyId: string, verb: 'rotate' | 'revoke') => {
    const r = await getKey(s, keyId);
    if (r.status !== 200)
      return page(
        dashboardPage(s, '/dashboard/keys', 'No such key', `${problemNote(r)}<p><a href="/dashboard/keys">All keys</a></p>`),
        r.status,
      );
    const k = r.body as KeyRow;
    const kid = e(String(k.id));
    const what =
      verb === 'revoke'
        ? `<p>Revoking <strong>${keyLabel(k)}</strong> (<code>${kid}</code>) makes every request with it answer 401 at once. It cannot be undone; its receipts stay in the public log.</p>`
        : `<p>Rotating <strong>${keyLabel(k)}</strong> (<code>${kid}</code>) gives it a new secret, shown once. The old secret keeps working for ${ctx.config.KEY_ROTATION_GRACE_SECONDS} seconds, so your agent can switch over.</p>`;
    return page(
      dashboardPage(
        s,
        '/dashboard/keys',
        verb === 'revoke' ? 'Revoke this key?' : 'Rotate this key?',
        `${what}<form method="post" action="/dashboard/keys/${kid}/${verb}">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit"${verb === 'revoke' ? ' class="danger"' : ''}>Yes, ${verb} ${e(String(k.name))}</button> <a href="/dashboard/keys">Cancel</a></p></form>`,
      ),
    );
  };
  for (const verb of ['rotate', 'revoke'] as const) {
    app.get(`/dashboard/keys/:key_id/${verb}`, async (event) => {
      const s = await readSession(event, ctx);
      return s ? confirmPage(s, id(event), verb) : toSignin(event);
    });
    app.post(`/dashboard/keys/:key_id/${verb}`, async (event) => {
      const p = await posted(event);
      if (!p) return redirect('/signin');
      const keyId = encodeURIComponent(id(event));
      if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/keys/${keyId}/${verb}`);
      const r = await callApi(app, ctx, p.session, 'POST', `/v1/keys/${keyId}/${verb}`);
      if (r.status !== 200) return keysPage(event, p.session, problemNote(r), r.status);
      if (verb === 'revoke') return redirect('/dashboard/keys?done=revoked');
      const b = r.body;
      const flash: NewSecret = { kind: 'rotated', id: String(b.id), name: String(b.name), role: String(b.role), secret: String(b.secret) };
      return redirect(`/dashboard/keys/${keyId}?rotated=1`, [flashCookie(event, ctx, flash)]);
    });
  }
}

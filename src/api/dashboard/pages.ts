/**
 * The signed-in dashboard (issue 14): server-rendered pages and plain HTML
 * forms, usable without JavaScript. Every action is the API call an operator
 * key would make: the form handler dispatches it in-process to the very route
 * (`/v1/keys`, `/v1/fuses/...`) as the account's dashboard key, so it is
 * validated, receipted and role-checked exactly as over HTTP.
 */
import type { H3, H3Event, H3EventContext } from 'h3';
import {
  accountKeyNames,
  accountReceipts,
  countAccountReceipts,
  RECEIPT_SCAN_BUDGET,
  type ReceiptFilter,
  type ReceiptRow,
} from '../../ledger/accounts.ts';
import { RECEIPT_DECISIONS, RECEIPT_KINDS, RECEIPT_REFUSALS } from '../../domain/receipt-words.ts';
import { getFuse } from '../../ledger/fuses.ts';
import type { AppContext } from '../context.ts';
import { isToolName, TOOL_NAME_MESSAGE } from '../../domain/tool-name.ts';
import { escapeHtml } from '../html.ts';
import { Problem } from '../problem.ts';
import type { Router } from '../router.ts';
import { PUBLIC_LOG_NOTE } from './signin.ts';
import { timeTag } from './when.ts';
import {
  csrfField,
  dashboardPage,
  doneNotice,
  modeCookie,
  page,
  readSession,
  readSignedInForm,
  redirect,
  requireRole,
  safeNext,
  sessionOwner,
  toSignin as signinFirst,
  type Session,
} from './web.ts';
import { auditUndeclared } from '../audit.ts';
import { allows, roleForCall } from '../../domain/team-roles.ts';

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * Calls an API route in-process as the session's dashboard (operator) key.
 * The person's role in the account decides first (team-roles.ts roleForCall:
 * a viewer's POST is a 403 before anything runs), and a change that succeeds
 * is written to the audit log as theirs (api/audit.ts routeAuditor, or
 * `dashboard.call` for a route that declares no entry).
 */
export async function callApi(
  app: H3,
  ctx: AppContext,
  session: Session,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  requireRole(session, roleForCall(method, path), `${method} ${path.split('?')[0]}`);
  const init: RequestInit = {
    method,
    headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
  };
  if (body !== undefined) init.body = JSON.stringify(body);
  const context: H3EventContext = { apiKey: session.key, auditActor: session };
  const res = await app.request(new URL(path, ctx.config.BASE_URL).toString(), init, context);
  const text = await res.text();
  const answer = { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  if (method === 'POST' && res.ok && !context.audited) await auditUndeclared(ctx, session, path);
  return answer;
}

const e = escapeHtml;

export function problemNote(a: ApiAnswer): string {
  return `<p class="error" role="alert">${e(String(a.body.detail ?? a.body.title ?? `the request failed (${a.status})`))}</p>`;
}

export function registerDashboardRoutes(router: Router, ctx: AppContext): void {
  // HTML pages and forms, not API operations: registered on the app, outside the API description.
  const app = router.app;
  /** The session, or null (then the page answers a redirect to sign in, which comes back here). */
  const signedIn = async (event: H3Event) => (await readSession(event, ctx)) ?? null;
  const toSignin = (event?: H3Event) => (event ? signinFirst(event) : redirect('/signin'));
  /** A form post: the session, its CSRF check, and the form. */
  const posted = (event: H3Event) => readSignedInForm(event, ctx);
  const param = (event: H3Event, name: string) => String(event.context.params?.[name] ?? '');

  // ------------------------------------------------------------ the test-mode switch (docs/test-mode.md)
  app.post('/dashboard/mode', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    return redirect(safeNext(p.form.get('next')), [modeCookie(event, ctx, p.form.get('mode') === 'test' ? 'test' : 'live')]);
  });

  // ------------------------------------------------------------ fuses
  const fuseActions = (s: Session, f: Record<string, string | null>) => {
    if (!allows(s.role, 'operator')) return '';
    const id = e(String(f.fuse_id));
    const label = e(String(f.label ?? f.fuse_id));
    // Blowing is open to every key; charging (reviving) only to operators, which the dashboard is.
    const blow = f.state !== 'DEAD' ? `<a href="/dashboard/fuses/${id}/dead" aria-label="Blow ${label}">Blow…</a>` : '';
    const charge =
      f.state === 'DEAD' || f.state === 'UNSIGNED'
        ? `<a href="/dashboard/fuses/${id}/charge" aria-label="Charge ${label}">Charge…</a>`
        : '';
    return `<span class="actions">${blow} ${charge}</span>`;
  };
  const fusesPage = async (s: Session, note = '', status = 200) => {
    const list = await callApi(app, ctx, s, 'GET', '/v1/fuses');
    const fuses = (list.body.data ?? []) as Array<Record<string, string | null>>;
    const rows = fuses
      .map((f) => {
        const id = e(String(f.fuse_id));
        const label = e(String(f.label ?? f.fuse_id));
        return `<tr><td data-label="Fuse"><a href="/dashboard/fuses/${id}">${label}</a><br><code>${id}</code></td><td data-label="State"><strong>${e(String(f.state))}</strong></td><td data-label="Changed">${timeTag(f.updated_at)}</td><td data-label="Actions">${fuseActions(s, f)}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/fuses',
        'Fuses',
        `${note}${fuses.length ? `<table class="cards-sm"><thead><tr><th scope="col">Fuse</th><th scope="col">State</th><th scope="col">Changed</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No fuses yet.</p>'}
${
  allows(s.role, 'operator')
    ? `<h2>Create a fuse</h2><form method="post" action="/dashboard/fuses">${csrfField(s.csrf)}
<label for="fuse-label">Label</label><input id="fuse-label" name="label" maxlength="200">
<label for="fuse-state">State</label><select id="fuse-state" name="state"><option value="LIVE" selected>LIVE</option><option value="UNSIGNED">UNSIGNED</option></select>
<p><button type="submit">Create fuse</button></p></form>`
    : ''
}
<p class="muted">Blowing a fuse makes every hop on it fail closed. Only an operator (this dashboard, or an operator key) can charge it back.</p>
${PUBLIC_LOG_NOTE}`,
      ),
      status,
    );
  };
  app.get('/dashboard/fuses', async (event) => {
    const s = await signedIn(event);
    return s ? fusesPage(s, doneNotice(event, FUSE_DONE)) : toSignin(event);
  });
  app.post('/dashboard/fuses', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const label = (p.form.get('label') ?? '').trim();
    const r = await callApi(app, ctx, p.session, 'POST', '/v1/fuses', {
      state: p.form.get('state') ?? 'LIVE',
      ...(label ? { label } : {}),
    });
    return r.status === 201 ? redirect('/dashboard/fuses?done=created') : fusesPage(p.session, problemNote(r), r.status);
  });

  /** What a fuse page says after an action on it (`?done=`). */
  const FUSE_DONE = {
    created: 'Created the fuse. Hops on it are answered from now on; its id is in the list below.',
    dead: 'Blew the fuse: it is DEAD, and every hop on it is refused (DENY) until it is charged again.',
    charge: 'Charged the fuse: it is LIVE, and the agent holding it can act again.',
  };
  // Blow (-> DEAD) and charge (-> LIVE) each ask first, on a page of their own that works without script.
  const CONFIRM = {
    dead: {
      title: 'Blow this fuse?',
      what: 'Blowing it makes it DEAD: every hop on it is refused (DENY) at once, until an operator charges it again.',
      button: 'Yes, blow it',
      danger: true,
    },
    charge: {
      title: 'Charge this fuse?',
      what: 'Charging it makes it LIVE: the agent holding it can act again at once.',
      button: 'Yes, charge it to LIVE',
      danger: false,
    },
  } as const;
  for (const verb of ['dead', 'charge'] as const) {
    app.get(`/dashboard/fuses/:fuse_id/${verb}`, async (event) => {
      const s = await signedIn(event);
      if (!s) return toSignin(event);
      const id = e(param(event, 'fuse_id'));
      const c = CONFIRM[verb];
      const back = event.url.searchParams.get('from') === 'history' ? `/dashboard/fuses/${id}` : '/dashboard/fuses';
      return page(
        dashboardPage(
          s,
          '/dashboard/fuses',
          c.title,
          `<p><code>${id}</code>: ${c.what} The change gets a receipt in the public log.</p>
<form method="post" action="/dashboard/fuses/${id}/${verb}">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes"><input type="hidden" name="back" value="${e(back)}">
<p><button type="submit"${c.danger ? ' class="danger"' : ''}>${c.button}</button> <a href="${e(back)}">Cancel</a></p></form>`,
        ),
      );
    });
    app.post(`/dashboard/fuses/:fuse_id/${verb}`, async (event) => {
      const p = await posted(event);
      if (!p) return toSignin();
      const id = encodeURIComponent(param(event, 'fuse_id'));
      if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/fuses/${id}/${verb}`);
      const r = await callApi(app, ctx, p.session, 'POST', `/v1/fuses/${id}/${verb}`);
      const back = p.form.get('back') === `/dashboard/fuses/${id}` ? `/dashboard/fuses/${id}` : '/dashboard/fuses';
      return r.status === 200 ? redirect(`${back}?done=${verb}`) : fusesPage(p.session, problemNote(r), r.status);
    });
  }

  app.get('/dashboard/fuses/:fuse_id', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin(event);
    const id = param(event, 'fuse_id');
    const fuse = await getFuse(ctx.ledger.read, id);
    if (!fuse || fuse.key_id !== sessionOwner(s))
      return page(
        dashboardPage(
          s,
          '/dashboard/fuses',
          'No such fuse',
          '<p>This account has no fuse with that id. <a href="/dashboard/fuses">All fuses</a></p>',
        ),
        404,
      );
    const f: Record<string, string | null> = { fuse_id: fuse.id, state: fuse.state, label: fuse.label, updated_at: fuse.updated_at };
    const [history, keys] = await Promise.all([
      accountReceipts(ctx.ledger.read, sessionOwner(s), { subject: id, kindPrefix: 'fuse_', limit: 200 }),
      callApi(app, ctx, s, 'GET', '/v1/keys'),
    ]);
    const names = new Map(
      ((keys.body.data ?? []) as Array<Record<string, string>>).map((k) => [
        k.id,
        s.dashboardKeyIds.includes(k.id!) ? 'this dashboard' : `${k.name} (${k.prefix}…)`,
      ]),
    );
    const rows = history
      .map(
        (r) =>
          `<tr><td data-label="When">${timeTag(r.created_at)}</td><td data-label="Change">${e(r.kind.replace(/^fuse_/, ''))}</td><td data-label="To">${e(r.decision)}</td><td data-label="By">${e(names.get(r.key_id) ?? 'a deleted key')}<br><code>${e(r.key_id)}</code></td><td data-label="Receipt"><a href="/verify?id=${e(r.id)}">verify</a> <code>${e(r.id)}</code></td></tr>`,
      )
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/fuses',
        `Fuse ${String(f.label ?? id)}`,
        `${doneNotice(event, FUSE_DONE)}<p><code>${e(id)}</code> is <strong>${e(String(f.state))}</strong> (since ${timeTag(f.updated_at)}). ${fuseActions(s, f).replace(/\/(dead|charge)"/g, '/$1?from=history"')}</p>
<h2>State history</h2>${rows ? `<table class="cards-sm"><thead><tr><th scope="col">When</th><th scope="col">Change</th><th scope="col">To</th><th scope="col">By</th><th scope="col">Receipt</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No change recorded yet.</p>'}
<p><a href="/dashboard/receipts?subject=${encodeURIComponent(id)}">Every receipt of this fuse</a>, hops included.</p>${PUBLIC_LOG_NOTE}`,
      ),
    );
  });

  // ------------------------------------------------------------ receipts
  /** The filter a query asks for; each field bounded, in any case, ids matched by prefix; decision "refusals" is every refusal. */
  const receiptFilter = (q: URLSearchParams, limit: number): { filter: ReceiptFilter; fields: Record<string, string>; bad: string[] } => {
    const fields: Record<string, string> = {};
    const bad: string[] = [];
    for (const name of ['kind', 'decision', 'key', 'subject', 'id', 'tool', 'from', 'to', 'before', 'after']) {
      const v = (q.get(name) ?? '').trim();
      if (!v) continue;
      const day = name === 'from' || name === 'to';
      const ok = day
        ? /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v))
        : name === 'tool'
          ? isToolName(v)
          : /^[A-Za-z0-9_.:-]{1,80}$/.test(v);
      if (ok) fields[name] = v;
      else
        bad.push(
          day
            ? `${name}: a date such as 2026-11-01`
            : name === 'tool'
              ? `tool: ${TOOL_NAME_MESSAGE}`
              : `${name}: letters, digits and _ . : - only`,
        );
    }
    // "to" is a whole day: receipts before the next day's start.
    const nextDay = (d: string) => new Date(Date.parse(d + 'T00:00:00Z') + 86_400_000).toISOString().slice(0, 10);
    const refusals = fields.decision?.toLowerCase() === REFUSALS_CHOICE;
    return {
      filter: {
        kind: fields.kind,
        ...(refusals ? { decisions: RECEIPT_REFUSALS } : { decision: fields.decision }),
        key: fields.key,
        subject: fields.subject,
        id: fields.id,
        tool: fields.tool,
        from: fields.from,
        to: fields.to ? nextDay(fields.to) : undefined,
        before: fields.before,
        after: fields.after,
        limit,
      },
      fields,
      bad,
    };
  };
  const REFUSALS_CHOICE = 'refusals';
  const PAGE = 50;
  const EXPORT_MAX = 10_000;
  const verifyLink = (id: string) => `${ctx.config.BASE_URL}/verify?id=${encodeURIComponent(id)}`;
  /** A select of known values; a value from a link that is not among them stays chosen. */
  const choice = (name: string, label: string, any: string, options: ReadonlyArray<readonly [string, string]>, current = '') => {
    const known = options.some(([v]) => v.toLowerCase() === current.toLowerCase());
    const all: ReadonlyArray<readonly [string, string]> = current && !known ? [...options, [current, current]] : options;
    const opts = all
      .map(
        ([v, text]) =>
          `<option value="${e(v)}"${v.toLowerCase() === current.toLowerCase() && current ? ' selected' : ''}>${e(text)}</option>`,
      )
      .join('');
    return `<p><label for="f-${name}">${label}</label><select id="f-${name}" name="${name}"><option value="">${any}</option>${opts}</select></p>`;
  };

  app.get('/dashboard/receipts', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin(event);
    const { filter, fields, bad } = receiptFilter(event.url.searchParams, PAGE + 1);
    // Newer: every match above the cursor, of which the page is the oldest PAGE (and one more says there are newer still).
    const found = bad.length
      ? []
      : fields.after
        ? (await accountReceipts(ctx.ledger.read, sessionOwner(s), { ...filter, limit: RECEIPT_SCAN_BUDGET })).slice(-(PAGE + 1))
        : await accountReceipts(ctx.ledger.read, sessionOwner(s), filter);
    const shown = fields.after ? found.slice(-PAGE) : found.slice(0, PAGE);
    const [total, keys] = bad.length
      ? [{ count: 0, more: false }, new Map<string, string>()]
      : await Promise.all([
          countAccountReceipts(ctx.ledger.read, sessionOwner(s), filter),
          accountKeyNames(ctx.ledger.read, sessionOwner(s)),
        ]);
    const named = (name: string | null, id: string) => (name ? `${e(name)} <code>${e(id)}</code>` : `<code>${e(id)}</code>`);
    const rows = shown
      .map(
        (r) =>
          `<tr><td data-label="When">${timeTag(r.created_at)}</td><td data-label="Kind">${e(r.kind)}</td><td data-label="Decision"><strong>${e(r.decision)}</strong></td><td data-label="Reason">${e(r.reason ?? '')}</td><td data-label="Charged">${e(r.amount_usd)}</td><td data-label="Subject">${r.subject ? named(r.fuse_label, r.subject) : ''}</td><td data-label="Tool">${r.tool ? `<code>${e(r.tool)}</code>` : ''}</td><td data-label="Key">${named(r.key_name, r.key_id)}</td><td data-label="Receipt"><a href="/verify?id=${e(r.id)}">verify</a> <code>${e(r.id)}</code></td></tr>`,
      )
      .join('');
    const query = (cursor: Record<string, string>) => {
      const q = new URLSearchParams({ ...fields, ...cursor });
      if (!('before' in cursor)) q.delete('before');
      if (!('after' in cursor)) q.delete('after');
      return q.toString();
    };
    const newerExist = fields.after ? found.length > PAGE : Boolean(fields.before);
    const olderExist = fields.after ? true : found.length > PAGE;
    const newer =
      newerExist && shown.length ? `<a href="/dashboard/receipts?${e(query({ after: shown[0]!.id }))}" rel="prev">Newer receipts</a>` : '';
    const older =
      olderExist && shown.length
        ? `<a href="/dashboard/receipts?${e(query({ before: shown.at(-1)!.id }))}" rel="next">Older receipts</a>`
        : '';
    const newest = fields.before || fields.after ? `<a href="/dashboard/receipts?${e(query({}))}">Newest</a>` : '';
    const count = `${total.count.toLocaleString('en')}${total.more ? '+' : ''}`;
    const summary = bad.length
      ? ''
      : `<p class="muted" id="receipts-total">${total.count === 1 && !total.more ? '1 receipt matches' : `${count} receipts match`}${total.more ? ` (counted over the newest ${RECEIPT_SCAN_BUDGET.toLocaleString('en')} examined)` : ''}.</p>`;
    const input = (name: string, label: string, type = 'text') =>
      `<p><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" type="${type}" value="${e(fields[name] ?? '')}"></p>`;
    const kindChoice = choice(
      'kind',
      'Kind',
      'Any kind',
      RECEIPT_KINDS.map((k) => [k, k] as const),
      fields.kind,
    );
    const decisionChoice = choice(
      'decision',
      'Decision',
      'Any decision',
      [[REFUSALS_CHOICE, 'Refusals'], ...RECEIPT_DECISIONS.map((d) => [d, d] as const)],
      fields.decision,
    );
    const keyChoice = choice(
      'key',
      'Key',
      'Any key',
      [...keys].map(([id, name]) => [id, `${name} (${id})`] as const),
      fields.key,
    );
    return page(
      dashboardPage(
        s,
        '/dashboard/receipts',
        'Receipts',
        `<form method="get" action="/dashboard/receipts"><div class="row">${kindChoice}${decisionChoice}${keyChoice}${input('subject', 'Fuse or subject id, or its start')}${input('id', 'Receipt id or its start')}${input('tool', 'Tool (send_email…)')}${input('from', 'From (UTC day)', 'date')}${input('to', 'To (UTC day)', 'date')}</div>
<p><button type="submit">Filter</button> <a href="/dashboard/receipts">Clear</a></p></form>
${bad.length ? `<p class="error" role="alert">${e(bad.join('; '))}</p>` : ''}${summary}
<p>Export what matches: <a href="/dashboard/receipts.csv?${e(query({}))}" download>CSV</a> · <a href="/dashboard/receipts.json?${e(query({}))}" download>JSON</a> <span class="muted">(up to ${EXPORT_MAX.toLocaleString('en')} receipts, newest first)</span></p>
${rows ? `<table class="cards-sm"><thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Decision</th><th scope="col">Reason</th><th scope="col">Charged (USD)</th><th scope="col">Subject</th><th scope="col">Tool</th><th scope="col">Key</th><th scope="col">Receipt</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No receipts match.</p>'}
<nav aria-label="Pages of receipts" class="actions">${newest} ${newer} ${older}</nav>
<p class="muted">Newest first, ${PAGE} a page. Refusals are ${RECEIPT_REFUSALS.join(', ')}. Charged is what the act billed its key. Kind, decision and tool match in any case; ids match by their start. A tool is the agent's tool a proxied MCP call or a guarded SDK tool gated. Each receipt's page checks its signature and its inclusion in the public log.</p>`,
      ),
      bad.length ? 400 : 200,
    );
  });

  for (const format of ['csv', 'json'] as const) {
    app.get(`/dashboard/receipts.${format}`, async (event) => {
      const s = await signedIn(event);
      if (!s) return toSignin(event);
      const { filter, bad } = receiptFilter(event.url.searchParams, 1000);
      if (bad.length) throw new Problem({ status: 400, code: 'invalid_query', title: 'Bad request', detail: bad.join('; ') });
      const all: ReceiptRow[] = [];
      for (let before = filter.before; all.length < EXPORT_MAX;) {
        const batch = await accountReceipts(ctx.ledger.read, sessionOwner(s), {
          ...filter,
          before,
          limit: Math.min(1000, EXPORT_MAX - all.length),
        });
        all.push(...batch);
        if (batch.length < 1000) break;
        before = batch.at(-1)!.id;
      }
      const rows = all.map((r) => ({ ...r, verify_url: verifyLink(r.id) }));
      const stamp = new Date().toISOString().slice(0, 10);
      const headers = { 'cache-control': 'no-store', 'content-disposition': `attachment; filename="receipts-${stamp}.${format}"` };
      if (format === 'json')
        return new Response(JSON.stringify({ object: 'list', data: rows }, null, 1), {
          headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
        });
      const cols = [
        'id',
        'created_at',
        'kind',
        'decision',
        'reason',
        'amount_usd',
        'subject',
        'fuse_label',
        'tool',
        'key_id',
        'key_name',
        'verify_url',
      ] as const;
      // RFC 4180 quoting; a cell starting with = + - @ is prefixed so a spreadsheet does not run it as a formula.
      const cell = (v: string | null) => {
        const t = v ?? '';
        const safe = /^[=+\-@\t\r]/.test(t) ? `'${t}` : t;
        return /[",\r\n']/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
      };
      const csv = [cols.join(','), ...rows.map((r) => cols.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n';
      return new Response(csv, { headers: { ...headers, 'content-type': 'text/csv; charset=utf-8' } });
    });
  }
}

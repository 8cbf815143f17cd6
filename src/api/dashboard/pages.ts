/**
 * The signed-in dashboard (issue 14): server-rendered pages and plain HTML
 * forms, usable without JavaScript. Every action is the API call an operator
 * key would make: the form handler dispatches it in-process to the very route
 * (`/v1/keys`, `/v1/fuses/...`) as the account's dashboard key, so it is
 * validated, receipted and role-checked exactly as over HTTP.
 */
import type { H3, H3Event } from 'h3';
import { formatUsd } from '../../domain/money.ts';
import { periodReset, periodStart } from '../../domain/quota.ts';
import { accountChargesByDay, accountChargesBySku, accountReceipts } from '../../ledger/accounts.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml } from '../html.ts';
import type { Router } from '../router.ts';
import { csrfField, dashboardPage, page, readSession, readSignedInForm, redirect, type Session } from './web.ts';

export interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** Calls an API route in-process as the session's dashboard (operator) key. */
export async function callApi(app: H3, ctx: AppContext, session: Session, method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer> {
  const init: RequestInit = { method, headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await app.request(new URL(path, ctx.config.BASE_URL).toString(), init, { apiKey: session.key });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const e = escapeHtml;
const usd = (micros: number) => `${formatUsd(micros)} USD`;

/** Charges per day as an inline SVG bar chart, with the same figures in a table for everyone. */
function chargesChart(days: Array<{ day: string; micros: number; count: number }>): string {
  if (days.length === 0) return '<p class="muted">No charges this period yet.</p>';
  const max = Math.max(...days.map((d) => d.micros), 1);
  const w = 24;
  const h = 120;
  const bars = days
    .map((d, i) => {
      const bh = Math.max(1, Math.round((d.micros / max) * h));
      return `<rect x="${i * w + 2}" y="${h - bh}" width="${w - 4}" height="${bh}" fill="#1d4ed8"><title>${e(d.day)}: ${e(usd(d.micros))}</title></rect>`;
    })
    .join('');
  const svg = `<svg role="img" aria-label="Charges per day this period" width="${days.length * w}" height="${h}" viewBox="0 0 ${days.length * w} ${h}">${bars}</svg>`;
  const rows = days.map((d) => `<tr><td>${e(d.day)}</td><td>${d.count}</td><td>${e(usd(d.micros))}</td></tr>`).join('');
  return `<figure>${svg}<figcaption>Charges per UTC day, this period.</figcaption></figure>
<details><summary>The same as a table</summary><table><thead><tr><th scope="col">Day</th><th scope="col">Charges</th><th scope="col">Amount</th></tr></thead><tbody>${rows}</tbody></table></details>`;
}

export function problemNote(a: ApiAnswer): string {
  return `<p class="error" role="alert">${e(String(a.body.detail ?? a.body.title ?? `the request failed (${a.status})`))}</p>`;
}

export function registerDashboardRoutes(router: Router, ctx: AppContext): void {
  // HTML pages and forms, not API operations: registered on the app, outside the API description.
  const app = router.app;
  /** The session, or a redirect to sign in. */
  const signedIn = async (event: H3Event) => (await readSession(event, ctx)) ?? null;
  const toSignin = () => redirect('/signin');
  /** A form post: the session, its CSRF check, and the form. */
  const posted = (event: H3Event) => readSignedInForm(event, ctx);
  const param = (event: H3Event, name: string) => String(event.context.params?.[name] ?? '');

  app.get('/dashboard', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin();
    const since = periodStart('month');
    const [bySku, byDay] = await Promise.all([accountChargesBySku(ctx.ledger.read, s.accountId, since), accountChargesByDay(ctx.ledger.read, s.accountId, since)]);
    const total = bySku.reduce((a, r) => a + r.micros, 0);
    const skuRows = bySku.map((r) => `<tr><td><code>${e(r.sku)}</code></td><td>${r.count}</td><td>${e(usd(r.micros))}</td></tr>`).join('');
    return page(
      dashboardPage(
        s,
        '/dashboard',
        'Overview',
        `<p>This period: from ${e(since.slice(0, 10))} until ${e((periodReset('month') ?? '').slice(0, 10))} (UTC). Total charged: <strong>${e(usd(total))}</strong>.</p>
<h2>Charges per SKU</h2>${bySku.length ? `<table><thead><tr><th scope="col">SKU</th><th scope="col">Charges</th><th scope="col">Amount</th></tr></thead><tbody>${skuRows}</tbody></table>` : '<p class="muted">Nothing charged this period.</p>'}
<h2>Over time</h2>${chargesChart(byDay)}
<p>Each key's hops this period and its limit are on <a href="/dashboard/keys">Keys</a>.</p>`,
      ),
    );
  });

  // ------------------------------------------------------------ keys
  const keysPage = async (s: Session, note = '', status = 200) => {
    const list = await callApi(app, ctx, s, 'GET', '/v1/keys');
    const keys = (list.body.data ?? []) as Array<Record<string, string | number | null>>;
    const rows = keys
      .map((k) => {
        const dashboard = k.id === s.key.id;
        const revoke =
          k.status === 'active' && !dashboard
            ? `<form class="inline" method="post" action="/dashboard/keys/${e(String(k.id))}/revoke">${csrfField(s.csrf)}<button aria-label="Revoke ${e(String(k.name))}">Revoke</button></form>`
            : '';
        return `<tr><td>${e(String(k.name))}${dashboard ? ' <span class="muted">(this dashboard)</span>' : ''}<br><code>${e(String(k.id))}</code></td><td>${e(String(k.role))}</td><td><code>${e(String(k.prefix))}…</code></td><td>${k.hops_used} / ${k.hop_limit} per ${e(String(k.hop_period))}</td><td>${e(String(k.status))}</td><td>${e(String(k.last_used_at ?? 'never'))}</td><td>${revoke}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/keys',
        'API keys',
        `${note}<table><thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Prefix</th><th scope="col">Hops this period</th><th scope="col">Status</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>${
          list.body.has_more ? `<p class="muted">The ${keys.length} oldest keys are shown; list the rest with <code>GET /v1/keys?starting_after=${e(String(keys.at(-1)?.id))}</code>.</p>` : ''
        }
<h2>Create a key</h2><form method="post" action="/dashboard/keys">${csrfField(s.csrf)}
<label for="key-name">Name</label><input id="key-name" name="name" required maxlength="100">
<label for="key-role">Role</label><select id="key-role" name="role"><option value="agent" selected>agent: acts, may blow a fuse, never revives one</option><option value="operator">operator: also manages</option></select>
<p><button type="submit">Create key</button></p></form>
<p class="muted">The same as <code>POST /v1/keys</code> with an operator key.</p>`,
      ),
      status,
    );
  };
  app.get('/dashboard/keys', async (event) => {
    const s = await signedIn(event);
    return s ? keysPage(s) : toSignin();
  });
  app.post('/dashboard/keys', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const created = await callApi(app, ctx, p.session, 'POST', '/v1/keys', { name: p.form.get('name') ?? '', role: p.form.get('role') ?? 'agent' });
    if (created.status !== 201) return keysPage(p.session, problemNote(created), created.status);
    return keysPage(
      p.session,
      `<div class="notice" role="status"><p>Created the ${e(String(created.body.role))} key <strong>${e(String(created.body.name))}</strong>. Its secret is shown this once: store it now.</p><p><code id="new-secret">${e(String(created.body.secret))}</code></p></div>`,
      201,
    );
  });
  app.post('/dashboard/keys/:key_id/revoke', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/keys/${encodeURIComponent(param(event, 'key_id'))}/revoke`);
    return r.status === 200 ? redirect('/dashboard/keys') : keysPage(p.session, problemNote(r), r.status);
  });

  // ------------------------------------------------------------ fuses
  const fusesPage = async (s: Session, note = '', status = 200) => {
    const list = await callApi(app, ctx, s, 'GET', '/v1/fuses');
    const fuses = (list.body.data ?? []) as Array<Record<string, string | null>>;
    const rows = fuses
      .map((f) => {
        const id = e(String(f.fuse_id));
        const label = e(String(f.label ?? f.fuse_id));
        const blow = f.state !== 'DEAD' ? `<form class="inline" method="post" action="/dashboard/fuses/${id}/dead">${csrfField(s.csrf)}<button aria-label="Blow ${label}">Blow</button></form>` : '';
        const charge = f.state === 'DEAD' || f.state === 'UNSIGNED' ? `<a href="/dashboard/fuses/${id}/charge" aria-label="Charge ${label}">Charge…</a>` : '';
        return `<tr><td><a href="/dashboard/fuses/${id}">${label}</a><br><code>${id}</code></td><td><strong>${e(String(f.state))}</strong></td><td>${e(String(f.updated_at))}</td><td>${blow} ${charge}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/fuses',
        'Fuses',
        `${note}${fuses.length ? `<table><thead><tr><th scope="col">Fuse</th><th scope="col">State</th><th scope="col">Changed</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No fuses yet.</p>'}
<h2>Create a fuse</h2><form method="post" action="/dashboard/fuses">${csrfField(s.csrf)}
<label for="fuse-label">Label</label><input id="fuse-label" name="label" maxlength="200">
<label for="fuse-state">State</label><select id="fuse-state" name="state"><option value="LIVE" selected>LIVE</option><option value="UNSIGNED">UNSIGNED</option></select>
<p><button type="submit">Create fuse</button></p></form>
<p class="muted">Blowing a fuse makes every hop on it fail closed. Only an operator (this dashboard, or an operator key) can charge it back.</p>`,
      ),
      status,
    );
  };
  app.get('/dashboard/fuses', async (event) => {
    const s = await signedIn(event);
    return s ? fusesPage(s) : toSignin();
  });
  app.post('/dashboard/fuses', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const label = (p.form.get('label') ?? '').trim();
    const r = await callApi(app, ctx, p.session, 'POST', '/v1/fuses', { state: p.form.get('state') ?? 'LIVE', ...(label ? { label } : {}) });
    return r.status === 201 ? redirect('/dashboard/fuses') : fusesPage(p.session, problemNote(r), r.status);
  });
  app.post('/dashboard/fuses/:fuse_id/dead', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/fuses/${encodeURIComponent(param(event, 'fuse_id'))}/dead`);
    return r.status === 200 ? redirect('/dashboard/fuses') : fusesPage(p.session, problemNote(r), r.status);
  });
  app.get('/dashboard/fuses/:fuse_id/charge', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin();
    const id = e(param(event, 'fuse_id'));
    return page(
      dashboardPage(
        s,
        '/dashboard/fuses',
        'Charge this fuse?',
        `<p>Charging <code>${id}</code> makes it LIVE: the agent holding it can act again at once.</p>
<form method="post" action="/dashboard/fuses/${id}/charge">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit">Yes, charge it to LIVE</button> <a href="/dashboard/fuses">Cancel</a></p></form>`,
      ),
    );
  });
  app.post('/dashboard/fuses/:fuse_id/charge', async (event) => {
    const p = await posted(event);
    if (!p) return toSignin();
    const id = param(event, 'fuse_id');
    if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/fuses/${encodeURIComponent(id)}/charge`);
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/fuses/${encodeURIComponent(id)}/charge`);
    return r.status === 200 ? redirect('/dashboard/fuses') : fusesPage(p.session, problemNote(r), r.status);
  });
  app.get('/dashboard/fuses/:fuse_id', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin();
    const id = param(event, 'fuse_id');
    const history = await accountReceipts(ctx.ledger.read, s.accountId, { subject: id, limit: 200 });
    if (history.length === 0) return page(dashboardPage(s, '/dashboard/fuses', 'No such fuse', '<p>This account has no fuse with that id.</p>'), 404);
    const rows = history
      .filter((r) => r.kind.startsWith('fuse_'))
      .map((r) => `<tr><td>${e(r.created_at)}</td><td>${e(r.kind.replace(/^fuse_/, ''))}</td><td>${e(r.decision)}</td><td><code>${e(r.key_id)}</code></td><td><a href="/v1/receipts/${e(r.id)}">receipt</a></td></tr>`)
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/fuses',
        `Fuse ${id}`,
        `<h2>State history</h2><table><thead><tr><th scope="col">When</th><th scope="col">Change</th><th scope="col">To</th><th scope="col">By key</th><th scope="col">Proof</th></tr></thead><tbody>${rows}</tbody></table>
<p><a href="/dashboard/receipts?subject=${encodeURIComponent(id)}">Every receipt of this fuse</a>, hops included.</p>`,
      ),
    );
  });

  // ------------------------------------------------------------ receipts
  app.get('/dashboard/receipts', async (event) => {
    const s = await signedIn(event);
    if (!s) return toSignin();
    const q = event.url.searchParams;
    const clean = (name: string) => {
      const v = (q.get(name) ?? '').trim();
      return /^[A-Za-z0-9_.:-]{1,64}$/.test(v) ? v : undefined;
    };
    const filter = { kind: clean('kind'), decision: clean('decision'), subject: clean('subject'), limit: 100 };
    const rows = (await accountReceipts(ctx.ledger.read, s.accountId, filter))
      .map((r) => `<tr><td>${e(r.created_at)}</td><td>${e(r.kind)}</td><td>${e(r.decision)}</td><td><code>${e(r.subject ?? '')}</code></td><td><code>${e(r.key_id)}</code></td><td><a href="/v1/receipts/${e(r.id)}">verify</a></td></tr>`)
      .join('');
    const input = (name: 'kind' | 'decision' | 'subject', label: string) =>
      `<label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${e(filter[name] ?? '')}">`;
    return page(
      dashboardPage(
        s,
        '/dashboard/receipts',
        'Receipts',
        `<form method="get" action="/dashboard/receipts">${input('kind', 'Kind (e.g. hop)')}${input('decision', 'Decision (e.g. DENY)')}${input('subject', 'Subject (e.g. a fuse id)')}<p><button type="submit">Filter</button></p></form>
${rows ? `<table><thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Decision</th><th scope="col">Subject</th><th scope="col">Key</th><th scope="col">Verify</th></tr></thead><tbody>${rows}</tbody></table>` : '<p class="muted">No receipts match.</p>'}
<p class="muted">Newest first, at most 100. Each receipt's page checks its signature and its inclusion in the public log.</p>`,
      ),
    );
  });
}

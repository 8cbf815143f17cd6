/**
 * Dashboard pages for licence parents and tickets, MGA authority grants, and
 * webhooks with their deliveries. Like pages.ts: plain forms, each action the
 * operator API call (dispatched in-process as the dashboard key).
 */
import type { H3Event } from 'h3';
import type { AppContext } from '../context.ts';
import { escapeHtml as e } from '../html.ts';
import type { Router } from '../router.ts';
import { callApi, problemNote } from './pages.ts';
import { csrfField, dashboardPage, page, readSession, readSignedInForm, redirect, toSignin, type Session } from './web.ts';

type Row = Record<string, unknown>;
const s_ = (v: unknown) => e(v === null || v === undefined ? '' : String(v));
const table = (head: string[], rows: string) =>
  `<table><thead><tr>${head.map((h) => `<th scope="col">${h}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>`;

export function registerManagePages(router: Router, ctx: AppContext): void {
  const app = router.app;
  const posted = (event: H3Event) => readSignedInForm(event, ctx);
  const param = (event: H3Event, name: string) => encodeURIComponent(String(event.context.params?.[name] ?? ''));
  const form = (s: Session, action: string, label: string, aria?: string) =>
    `<form class="inline" method="post" action="${action}">${csrfField(s.csrf)}<button${aria ? ` aria-label="${e(aria)}"` : ''}>${label}</button></form>`;

  // ------------------------------------------------------------ licences and tickets
  const licencesPage = async (s: Session, note = '', status = 200) => {
    const [lic, tickets] = await Promise.all([
      callApi(app, ctx, s, 'GET', '/v1/pas/licenses'),
      callApi(app, ctx, s, 'GET', '/v1/pas/tickets?limit=50'),
    ]);
    const licRows = ((lic.body.data ?? []) as Row[])
      .map((l) => {
        const id = s_(l.license_id);
        const act =
          l.state === 'DEAD'
            ? `<a href="/dashboard/licences/${id}/charge" aria-label="Charge ${id}">Charge…</a>`
            : form(s, `/dashboard/licences/${id}/dead`, 'Blow', `Blow ${id}`);
        return `<tr><td><code>${id}</code></td><td><strong>${s_(l.state)}</strong></td><td>${s_(l.outstanding)}</td><td>${s_(l.updated_at)}</td><td>${act}</td></tr>`;
      })
      .join('');
    const ticketRows = ((tickets.body.data ?? []) as Row[])
      .map(
        (t) =>
          `<tr><td><code>${s_(t.ticket_id)}</code></td><td><code>${s_(t.license_id)}</code></td><td>${s_(t.job_id)}</td><td>${s_(t.issued_at)}</td><td>${s_(t.expires_at)}</td><td>${s_(t.redeemed_at ?? 'no')}</td></tr>`,
      )
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/licences',
        'Licences and tickets',
        `${note}<h2>Licence parents</h2>${licRows ? table(['Licence', 'Stored state', 'Outstanding tickets', 'Changed', 'Actions'], licRows) : '<p class="muted">No licence parent has been charged yet.</p>'}
<h2>Charge a licence parent</h2><form method="get" action="/dashboard/licences/charge"><label for="lic-id">Licence id</label><input id="lic-id" name="license_id" required pattern="[A-Za-z0-9_\\-]{1,64}"><p><button type="submit">Continue…</button></p></form>
<h2>Bind tickets</h2>${ticketRows ? table(['Ticket', 'Licence', 'Job', 'Issued', 'Expires', 'Redeemed'], ticketRows) : '<p class="muted">No tickets yet.</p>'}`,
      ),
      status,
    );
  };
  const confirmCharge = (s: Session, id: string) =>
    page(
      dashboardPage(
        s,
        '/dashboard/licences',
        'Charge this licence parent?',
        `<p>Charging <code>${e(id)}</code> makes it LIVE: outstanding and new bind tickets on it can redeem again.</p>
<form method="post" action="/dashboard/licences/${e(id)}/charge">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes"><p><button type="submit">Yes, charge it to LIVE</button> <a href="/dashboard/licences">Cancel</a></p></form>`,
      ),
    );
  app.get('/dashboard/licences', async (event) => {
    const s = await readSession(event, ctx);
    return s ? licencesPage(s) : toSignin(event);
  });
  app.get('/dashboard/licences/charge', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    const id = event.url.searchParams.get('license_id') ?? '';
    return /^[A-Za-z0-9_-]{1,64}$/.test(id)
      ? confirmCharge(s, id)
      : licencesPage(s, '<p class="error" role="alert">Enter a licence id such as lic_acme_2026.</p>', 400);
  });
  app.get('/dashboard/licences/:license_id/charge', async (event) => {
    const s = await readSession(event, ctx);
    return s ? confirmCharge(s, decodeURIComponent(param(event, 'license_id'))) : toSignin(event);
  });
  for (const verb of ['charge', 'dead'] as const) {
    app.post(`/dashboard/licences/:license_id/${verb}`, async (event) => {
      const p = await posted(event);
      if (!p) return redirect('/signin');
      if (verb === 'charge' && p.form.get('confirm') !== 'yes') return redirect(`/dashboard/licences/${param(event, 'license_id')}/charge`);
      const r = await callApi(app, ctx, p.session, 'POST', `/v1/pas/licenses/${param(event, 'license_id')}/${verb}`);
      return r.status === 200 ? redirect('/dashboard/licences') : licencesPage(p.session, problemNote(r), r.status);
    });
  }

  // ------------------------------------------------------------ MGA authority grants
  const grantsPage = async (s: Session, note = '', status = 200) => {
    const list = await callApi(app, ctx, s, 'GET', '/v1/pas/grants');
    const rows = ((list.body.data ?? []) as Row[])
      .map((g) => {
        const id = s_(g.grant_id);
        return `<tr><td>${s_(g.name ?? '')}<br><code>${id}</code></td><td>${s_(g.max_premium)} USD</td><td>${s_((g.lines as string[]).join(', '))}</td><td>${s_((g.states as string[]).join(', '))}</td><td>${g.revoked_at ? `revoked ${s_(g.revoked_at)}` : form(s, `/dashboard/grants/${id}/revoke`, 'Revoke', `Revoke grant ${id}`)}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/grants',
        'MGA authority grants',
        `${note}${rows ? table(['Grant', 'Max premium', 'Lines', 'States', 'Status'], rows) : '<p class="muted">No grants yet.</p>'}
<h2>Grant authority</h2><form method="post" action="/dashboard/grants">${csrfField(s.csrf)}
<label for="g-name">Name</label><input id="g-name" name="name" maxlength="200">
<label for="g-lines">Lines (comma separated, e.g. cyber,e_and_o)</label><input id="g-lines" name="lines" required>
<label for="g-states">States (comma separated, e.g. CA,NY)</label><input id="g-states" name="states" required>
<label for="g-max">Max premium (USD)</label><input id="g-max" name="max_premium" required inputmode="decimal">
<p><button type="submit">Create grant</button></p></form>`,
      ),
      status,
    );
  };
  app.get('/dashboard/grants', async (event) => {
    const s = await readSession(event, ctx);
    return s ? grantsPage(s) : toSignin(event);
  });
  app.post('/dashboard/grants', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const list = (name: string) =>
      (p.form.get(name) ?? '')
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean);
    const name = (p.form.get('name') ?? '').trim();
    const r = await callApi(app, ctx, p.session, 'POST', '/v1/pas/grants', {
      lines: list('lines'),
      states: list('states').map((x) => x.toUpperCase()),
      max_premium: (p.form.get('max_premium') ?? '').trim(),
      ...(name ? { name } : {}),
    });
    return r.status === 201 ? redirect('/dashboard/grants') : grantsPage(p.session, problemNote(r), r.status);
  });
  app.post('/dashboard/grants/:grant_id/revoke', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/pas/grants/${param(event, 'grant_id')}/revoke`);
    return r.status === 200 ? redirect('/dashboard/grants') : grantsPage(p.session, problemNote(r), r.status);
  });

  // ------------------------------------------------------------ webhooks and deliveries
  const webhooksPage = async (s: Session, note = '', status = 200) => {
    const r = await callApi(app, ctx, s, 'GET', '/signal/trigger/webhooks');
    const subs = ((r.body.subscriptions ?? []) as Row[])
      .map(
        (w) =>
          `<tr><td><code>${s_(w.id)}</code></td><td>${s_(w.url)}</td><td>${s_(w.trigger_id ?? w.template_id ?? 'every trigger')}</td><td>${s_(w.created_at)}</td></tr>`,
      )
      .join('');
    const deliveries = ((r.body.deliveries ?? []) as Row[])
      .map((d) => {
        const attempts = (d.attempts as Row[]).map((a) => `#${s_(a.n)} ${s_(a.at)}: ${s_(a.status ?? a.error)}`).join('<br>');
        const retry =
          d.state === 'delivered'
            ? ''
            : form(s, `/dashboard/webhooks/deliveries/${s_(d.id)}/retry`, 'Retry now', `Retry delivery ${s_(d.id)}`);
        return `<tr><td><code>${s_(d.id)}</code></td><td>${s_(d.event_type)}</td><td><strong>${s_(d.state)}</strong></td><td>${attempts || 'none yet'}</td><td>${retry}</td></tr>`;
      })
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/webhooks',
        'Webhooks',
        `${note}<h2>Subscriptions</h2>${subs ? table(['Subscription', 'URL', 'Events of', 'Created'], subs) : '<p class="muted">No subscriptions yet.</p>'}
<h2>Subscribe a URL</h2><form method="post" action="/dashboard/webhooks">${csrfField(s.csrf)}
<label for="w-url">HTTPS URL</label><input id="w-url" name="url" type="url" required>
<label for="w-template">Template id (optional; empty = every trigger)</label><input id="w-template" name="template_id">
<p><button type="submit">Subscribe</button></p></form>
<h2>Deliveries</h2>${deliveries ? table(['Delivery', 'Event', 'State', 'Attempts', 'Actions'], deliveries) : '<p class="muted">No deliveries yet.</p>'}`,
      ),
      status,
    );
  };
  app.get('/dashboard/webhooks', async (event) => {
    const s = await readSession(event, ctx);
    return s ? webhooksPage(s) : toSignin(event);
  });
  app.post('/dashboard/webhooks', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const template = (p.form.get('template_id') ?? '').trim();
    const r = await callApi(app, ctx, p.session, 'POST', '/signal/trigger/webhooks', {
      url: (p.form.get('url') ?? '').trim(),
      ...(template ? { template_id: template } : {}),
    });
    return r.status === 201 ? redirect('/dashboard/webhooks') : webhooksPage(p.session, problemNote(r), r.status);
  });
  app.post('/dashboard/webhooks/deliveries/:delivery_id/retry', async (event) => {
    const p = await posted(event);
    if (!p) return redirect('/signin');
    const r = await callApi(app, ctx, p.session, 'POST', `/signal/trigger/webhooks/deliveries/${param(event, 'delivery_id')}/retry`);
    return r.status === 200 ? redirect('/dashboard/webhooks') : webhooksPage(p.session, problemNote(r), r.status);
  });
}

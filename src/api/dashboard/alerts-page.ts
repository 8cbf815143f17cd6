/**
 * /dashboard/alerts (issue 31): the account's alert subscriptions (a fuse's
 * state changes, refused hops; docs/alerts.md), a form to add one, removal
 * with a confirmation, a test event on request, and the latest deliveries with
 * their endpoint, payload and every attempt. Like the
 * other dashboard pages, each action is the API call (/v1/alerts) dispatched
 * in-process as the account's dashboard key; every post answers with a
 * redirect, so a reload never posts twice.
 */
import type { H3Event } from 'h3';
import type { AppContext } from '../context.ts';
import { escapeHtml as e } from '../html.ts';
import type { Router } from '../router.ts';
import { callApi, problemNote } from './pages.ts';
import { csrfField, dashboardPage, page, readSession, readSignedInForm, redirect, type Session } from './web.ts';

type Row = Record<string, unknown>;
const s_ = (v: unknown) => e(v === null || v === undefined ? '' : String(v));
const table = (head: string[], rows: string) =>
  `<table><thead><tr>${head.map((h) => `<th scope="col">${h}</th>`).join('')}</tr></thead><tbody>${rows}</tbody></table>`;

/** What each event means, in the words the page shows beside its checkbox. */
const EVENT_LABELS: Record<string, string> = {
  'fuse.state_changed': 'A fuse changes state (blown to DEAD, charged back to LIVE)',
  'hop.denied': 'A hop is refused (DENY, BLOCK or SILENCE)',
  'review.opened': 'A HOLD asks for a review',
  'review.decided': 'A review is approved or denied',
  'review.expired': 'A review expires unanswered',
};

const ID = /^whs_[A-Za-z0-9_-]{1,64}$/;

/** What the add form held, refilled when the URL is refused. */
interface AddForm {
  url: string;
  events: string[];
  fuse_id: string;
}
const EMPTY_FORM: AddForm = { url: '', events: Object.keys(EVENT_LABELS), fuse_id: '' };

export function registerAlertsPage(router: Router, ctx: AppContext): void {
  const app = router.app;
  const param = (event: H3Event) => String(event.context.params?.alert_id ?? '');

  const alertsPage = async (s: Session, note = '', status = 200, form: AddForm = EMPTY_FORM) => {
    const [r, fuses] = await Promise.all([callApi(app, ctx, s, 'GET', '/v1/alerts'), callApi(app, ctx, s, 'GET', '/v1/fuses')]);
    const subs = ((r.body.data ?? []) as Row[])
      .map((w) => {
        const id = s_(w.id);
        const events = (w.events as string[]).map((x) => `<code>${e(x)}</code>`).join(', ');
        return `<li><p class="url"><strong>${s_(w.url)}</strong></p>
<dl><dt>Events</dt><dd>${events}</dd><dt>Fuse</dt><dd>${w.fuse_id ? `<code class="id">${s_(w.fuse_id)}</code>` : 'every fuse of this account'}</dd>
<dt>Subscription</dt><dd><code class="id">${id}</code>, since ${s_(w.created_at)}</dd></dl>
<form class="inline" method="post" action="/dashboard/alerts/${id}/test">${csrfField(s.csrf)}<button type="submit" class="secondary" aria-label="Send test event to ${s_(w.url)}">Send test event</button></form>
<p><a href="/dashboard/alerts/${id}/remove" aria-label="Remove ${id}">Remove…</a></p></li>`;
      })
      .join('');
    const deliveries = ((r.body.deliveries ?? []) as Row[])
      .map((d) => {
        const attempts = (d.attempts as Row[]).map((a) => `#${s_(a.n)} ${s_(a.at)}: ${s_(a.status ?? a.error)}`).join('<br>');
        const retry =
          d.state === 'delivered'
            ? ''
            : `<form class="inline" method="post" action="/dashboard/alerts/deliveries/${s_(d.id)}/retry">${csrfField(s.csrf)}<button aria-label="Retry delivery ${s_(d.id)}">Retry now</button></form>`;
        const test = (d.payload as Row | null)?.test === true ? ' <span class="tag">test</span>' : '';
        const payload = `<details><summary>Payload</summary><pre class="payload">${e(JSON.stringify(d.payload, null, 2))}</pre></details>`;
        return `<tr><td data-label="Event">${s_(d.event_type)}${test}<br><code class="id">${s_(d.event_id)}</code>${payload}</td><td data-label="Endpoint" class="url">${s_(d.url)}</td><td data-label="State"><strong>${s_(d.state)}</strong></td><td data-label="Attempts">${attempts || 'none yet'}</td><td data-label="Actions">${retry}</td></tr>`;
      })
      .join('');
    const removed = ((r.body.removed ?? []) as Row[])
      .map(
        (w) =>
          `<tr><td><code class="id">${s_(w.id)}</code></td><td class="url">${s_(w.url)}</td><td>${s_(w.disabled_at)}</td><td>${s_(w.disabled_reason)}</td></tr>`,
      )
      .join('');
    const fuseOptions = ((fuses.body.data ?? []) as Row[])
      .map(
        (f) =>
          `<option value="${s_(f.fuse_id)}"${f.fuse_id === form.fuse_id ? ' selected' : ''}>${s_(f.label ?? f.fuse_id)} (${s_(f.fuse_id)})</option>`,
      )
      .join('');
    const checks = Object.entries(EVENT_LABELS)
      .map(
        ([v, label], i) =>
          `<label class="check"><input type="checkbox" name="events" value="${v}" id="a-ev-${i}"${form.events.includes(v) ? ' checked' : ''}> ${e(label)} <code>${v}</code></label>`,
      )
      .join('');
    return page(
      dashboardPage(
        s,
        '/dashboard/alerts',
        'Alerts',
        `${note}<p>Alerts tell you, by a signed webhook, when one of your fuses is blown or charged and when a hop is refused.
Each delivery is signed with the service's Ed25519 key and retried with back-off until your URL answers 2xx, exactly as trigger webhooks (<a href="/docs/alerts">how to verify them</a>).</p>
<h2>Subscriptions</h2>${subs ? `<ul class="subs">${subs}</ul>` : '<p class="muted">No alert subscriptions yet.</p>'}
<h2>Add a subscription</h2><form method="post" action="/dashboard/alerts">${csrfField(s.csrf)}
<label for="a-url">URL (HTTPS) that receives the events</label><input id="a-url" name="url" type="url" required placeholder="https://ops.example.com/hooks/fusegate" value="${e(form.url)}">
<fieldset><legend>Events</legend>${checks}</fieldset>
<label for="a-fuse">Fuse</label><select id="a-fuse" name="fuse_id"><option value="">Every fuse of this account</option>${fuseOptions}</select>
<p><button type="submit">Add subscription</button></p></form>
<h2 id="deliveries">Recent deliveries</h2>${deliveries ? table(['Event', 'Endpoint', 'State', 'Attempts', 'Actions'], deliveries) : '<p class="muted">No deliveries yet: they appear here when a fuse changes state or a hop is refused.</p>'}
${removed ? `<h2>Removed or disabled</h2>${table(['Subscription', 'URL', 'Since', 'Why'], removed)}` : ''}
<style>.check{display:flex;gap:.4rem;align-items:baseline}fieldset{margin:.5rem 0}#a-url{width:100%;max-width:40rem;box-sizing:border-box}
ul.subs{list-style:none;padding:0}ul.subs li{border:1px solid #d1d5db;border-radius:.4rem;padding:.25rem .9rem;margin:.5rem 0}
ul.subs dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:.3rem 0}ul.subs dt{font-weight:600}ul.subs dd{margin:0}
.url,code.id{overflow-wrap:anywhere}pre.payload{white-space:pre-wrap;overflow-wrap:anywhere;max-width:36rem;font-size:.85rem}
.tag{font-size:.8rem;border:1px solid currentColor;border-radius:.3rem;padding:0 .3rem}ul.subs form.inline button{min-height:44px}</style>`,
      ),
      status,
    );
  };

  const notice = (text: string) => `<p class="notice" role="status">${e(text)}</p>`;

  app.get('/dashboard/alerts', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return redirect('/signin');
    const q = event.url.searchParams;
    const added = q.get('added') ?? '';
    const gone = q.get('removed') ?? '';
    const tested = q.get('tested') ?? '';
    const note = ID.test(added)
      ? notice(`Subscription ${added} added: events are delivered from now on.`)
      : ID.test(gone)
        ? notice(`Subscription ${gone} removed: it receives no more events.`)
        : ID.test(tested)
          ? notice(`Test event sent to ${tested}: its delivery is below, marked test.`)
          : '';
    return alertsPage(s, note);
  });

  app.post('/dashboard/alerts', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const fuse = (p.form.get('fuse_id') ?? '').trim();
    const body = { url: (p.form.get('url') ?? '').trim(), events: p.form.getAll('events'), ...(fuse ? { fuse_id: fuse } : {}) };
    const r = await callApi(app, ctx, p.session, 'POST', '/v1/alerts', body);
    return r.status === 201
      ? redirect(`/dashboard/alerts?added=${encodeURIComponent(String(r.body.id))}`)
      : alertsPage(p.session, problemNote(r), r.status, { url: body.url, events: body.events.map(String), fuse_id: fuse });
  });

  app.post('/dashboard/alerts/:alert_id/test', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const id = encodeURIComponent(param(event));
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/alerts/${id}/test`);
    return r.status === 202 ? redirect(`/dashboard/alerts?tested=${id}#deliveries`) : alertsPage(p.session, problemNote(r), r.status);
  });

  app.get('/dashboard/alerts/:alert_id/remove', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return redirect('/signin');
    const id = e(param(event));
    return page(
      dashboardPage(
        s,
        '/dashboard/alerts',
        'Remove this alert subscription?',
        `<p>After removing <code>${id}</code>, no more events are sent to its URL, and its deliveries still pending are given up.</p>
<form method="post" action="/dashboard/alerts/${id}/remove">${csrfField(s.csrf)}<input type="hidden" name="confirm" value="yes">
<p><button type="submit">Yes, remove it</button> <a href="/dashboard/alerts">Cancel</a></p></form>`,
      ),
    );
  });

  app.post('/dashboard/alerts/:alert_id/remove', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const id = encodeURIComponent(param(event));
    if (p.form.get('confirm') !== 'yes') return redirect(`/dashboard/alerts/${id}/remove`);
    const r = await callApi(app, ctx, p.session, 'POST', `/v1/alerts/${id}/remove`);
    return r.status === 200 ? redirect(`/dashboard/alerts?removed=${id}`) : alertsPage(p.session, problemNote(r), r.status);
  });

  app.post('/dashboard/alerts/deliveries/:delivery_id/retry', async (event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    const r = await callApi(
      app,
      ctx,
      p.session,
      'POST',
      `/signal/trigger/webhooks/deliveries/${encodeURIComponent(String(event.context.params?.delivery_id ?? ''))}/retry`,
    );
    return r.status === 200 ? redirect('/dashboard/alerts') : alertsPage(p.session, problemNote(r), r.status);
  });
}

/**
 * /dashboard/audit (issue 49, docs/accounts.md#audit-log): what the account's
 * people did in the dashboard, who and when, newest first, filtered by action,
 * person and day, paged older. The same page of entries GET /v1/audit answers
 * (api/audit.ts auditPage), read for every role: a viewer sees what changed.
 */
import { AUDIT_ACTIONS } from '../../domain/audit-actions.ts';
import { auditPage, auditQuery } from '../audit.ts';
import type { AppContext } from '../context.ts';
import { escapeHtml as e } from '../html.ts';
import { Problem } from '../problem.ts';
import type { Router } from '../router.ts';
import { membersOf } from '../../ledger/members.ts';
import { timeTag } from './when.ts';
import { dashboardPage, page, readSession, toSignin } from './web.ts';

const PAGE = 50;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const AREAS = [...new Set(AUDIT_ACTIONS.map((a) => a.slice(0, a.indexOf('.') + 1)))];

/** A detail as a person reads it: `key: value` pairs, lists joined. */
const detailText = (d: Record<string, unknown> | null) =>
  d
    ? Object.entries(d)
        .map(([k, v]) => `${k.replace(/_/g, ' ')}: ${Array.isArray(v) ? v.join(', ') : v === null ? 'none' : String(v)}`)
        .join('; ')
    : '';

export function registerAuditPage(router: Router, ctx: AppContext): void {
  router.app.get('/dashboard/audit', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    const q = event.url.searchParams;
    const asked: Record<string, string> = {};
    for (const f of ['action', 'actor', 'from', 'to', 'before']) {
      const v = q.get(f)?.trim();
      if (v) asked[f] = v;
    }
    // The page's day fields are whole UTC days; the API takes instants.
    const bad = (['from', 'to'] as const).filter(
      (f) => asked[f] !== undefined && (!DAY.test(asked[f]) || Number.isNaN(Date.parse(asked[f]))),
    );
    const apiQuery = new URLSearchParams({ ...asked, limit: String(PAGE) });
    if (asked.from && !bad.includes('from')) apiQuery.set('from', `${asked.from}T00:00:00Z`);
    if (asked.to && !bad.includes('to')) apiQuery.set('to', new Date(Date.parse(`${asked.to}T00:00:00Z`) + 86_400_000).toISOString());
    let list: Awaited<ReturnType<typeof auditPage>> = { object: 'list', data: [], next: null };
    let refused = bad.length ? `<p class="error" role="alert">${bad.map((f) => `${f}: a date such as 2026-11-01`).join('; ')}</p>` : '';
    if (!refused) {
      try {
        list = await auditPage(ctx, s.accountId, auditQuery(apiQuery));
      } catch (err) {
        if (!(err instanceof Problem)) throw err;
        refused = `<p class="error" role="alert">${e(err.detail ?? err.message)}</p>`;
      }
    }
    const members = await membersOf(ctx.ledger.read, s.accountId);
    const option = (value: string, label: string, chosen: string | undefined) =>
      `<option value="${e(value)}"${value === (chosen ?? '') ? ' selected' : ''}>${e(label)}</option>`;
    const rows = list.data
      .map(
        (x) =>
          `<tr><td data-label="When">${timeTag(x.at)}</td><td data-label="Who">${x.actor.kind === 'key' ? `key ${e(x.actor.name)} <code>${e(x.actor.id)}</code>` : e(x.actor.email)}</td><td data-label="What"><code>${e(x.action)}</code></td><td data-label="On">${x.target ? `<code>${e(x.target)}</code>` : ''}</td><td data-label="Detail">${e(detailText(x.detail))}</td></tr>`,
      )
      .join('');
    const filters = new URLSearchParams(asked);
    filters.delete('before');
    const older = list.next
      ? `<a href="/dashboard/audit?${new URLSearchParams({ ...Object.fromEntries(filters), before: list.next })}">Older entries</a>`
      : '';
    const newest = asked.before ? `<a href="/dashboard/audit?${filters}">Newest entries</a>` : '';
    return page(
      dashboardPage(
        s,
        '/dashboard/audit',
        'Audit log',
        `<p>What the account’s people did in the dashboard, and its keys through the API: keys made and revoked, caps changed, fuses blown and charged, people invited, removed and given another role, passwords changed. Who, what, on what and when; never a secret (<a href="/docs/accounts#audit-log">the audit log</a>, also <code>GET /v1/audit</code> with an operator key).</p>
<form method="get" action="/dashboard/audit" class="row">
<div><label for="f-action">Action</label><select id="f-action" name="action">${option('', 'Every action', asked.action)}${AREAS.map((a) => option(a, `every ${a.slice(0, -1)} action`, asked.action)).join('')}${AUDIT_ACTIONS.map((a) => option(a, a, asked.action)).join('')}</select></div>
<div><label for="f-actor">Person</label><select id="f-actor" name="actor">${option('', 'Everyone', asked.actor)}${members.map((m) => option(m.email, m.email, asked.actor)).join('')}</select></div>
<div><label for="f-from">From (UTC day)</label><input id="f-from" name="from" type="date" value="${e(asked.from ?? '')}"></div>
<div><label for="f-to">To (UTC day)</label><input id="f-to" name="to" type="date" value="${e(asked.to ?? '')}"></div>
<div><button type="submit">Filter</button></div></form>
${refused}${rows ? `<table class="cards-sm audit"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">On</th><th scope="col">Detail</th></tr></thead><tbody>${rows}</tbody></table>` : refused ? '' : '<p class="muted">No entry matches yet.</p>'}
<p class="actions">${newest} ${older}</p>
<style>table.audit{margin-top:1rem}table.audit code{overflow-wrap:anywhere}</style>`,
      ),
      refused ? 400 : 200,
    );
  });
}

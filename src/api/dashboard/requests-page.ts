/**
 * /dashboard/requests (issue 49, docs/request-log.md): the account's request
 * log, failures included, newest first, filtered by key, status, code and
 * path, paged older. Listing is the API call (GET /v1/requests) dispatched
 * in-process as the account's dashboard key, so the page and the API show the
 * same rows and refuse the same filters.
 */
import type { AppContext } from '../context.ts';
import { escapeHtml as e } from '../html.ts';
import type { Router } from '../router.ts';
import { callApi } from './pages.ts';
import { dashboardPage, listedKey, page, readSession, redirect } from './web.ts';

type Row = Record<string, unknown>;
const s_ = (v: unknown) => e(v === null || v === undefined ? '' : String(v));

/** The filters the page offers, as the API names them. */
const FILTERS = ['key', 'status', 'code', 'path'] as const;
const STATUSES: Array<[string, string]> = [
  ['', 'Any status'],
  ['failed', 'Failed (400 and up)'],
  ['2xx', '2xx'],
  ['4xx', '4xx'],
  ['5xx', '5xx'],
];

function requestRow(r: Row): string {
  const status = Number(r.status);
  const receipt = r.receipt_id ? `<a href="${s_(r.verify_url)}"><code class="id">${s_(r.receipt_id)}</code></a>` : '—';
  return `<tr${status >= 400 ? ' class="failed"' : ''}><td data-label="Time"><time datetime="${s_(r.at)}">${s_(String(r.at).replace('T', ' ').slice(0, 19))}</time></td>
<td data-label="Key">${s_(r.key_name ?? r.key_id)}</td><td data-label="Request"><code>${s_(r.method)} ${s_(r.path)}</code></td>
<td data-label="Status"><strong>${status}</strong>${r.code ? ` <code>${s_(r.code)}</code>` : ''}</td>
<td data-label="Latency">${Number(r.latency_ms).toFixed(1)} ms</td><td data-label="Receipt">${receipt}</td></tr>`;
}

export function registerRequestsPage(router: Router, ctx: AppContext): void {
  const app = router.app;
  app.get('/dashboard/requests', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return redirect('/signin');
    const q = event.url.searchParams;
    const asked = new URLSearchParams();
    for (const f of [...FILTERS, 'before'] as const) {
      const v = q.get(f)?.trim();
      if (v) asked.set(f, v);
    }
    const [list, keys] = await Promise.all([
      callApi(app, ctx, s, 'GET', `/v1/requests?${asked}&limit=50`),
      callApi(app, ctx, s, 'GET', '/v1/keys?limit=100'),
    ]);
    const off =
      list.body.enabled === false
        ? '<p class="notice" role="status">The request log is off on this deployment: its operator turns it on with <code>REQUEST_LOG_ENABLED=true</code> (<a href="/docs/request-log">the request log</a>).</p>'
        : '';
    const refused = list.status !== 200 ? `<p class="error" role="alert">${s_(list.body.detail ?? 'That filter is not valid.')}</p>` : '';
    const rows = ((list.body.data ?? []) as Row[]).map(requestRow).join('');
    const keyNames = ((keys.body.data ?? []) as Row[]).filter((k) => listedKey(s, k)).map((k) => String(k.name));
    const option = (value: string, label: string, chosen: string | null) =>
      `<option value="${e(value)}"${value === (chosen ?? '') ? ' selected' : ''}>${e(label)}</option>`;
    const filters = new URLSearchParams(asked);
    filters.delete('before');
    const older = list.body.next
      ? `<a href="/dashboard/requests?${new URLSearchParams({ ...Object.fromEntries(filters), before: String(list.body.next) })}">Older requests</a>`
      : '';
    const newest = asked.has('before') ? `<a href="/dashboard/requests?${filters}">Newest requests</a>` : '';
    return page(
      dashboardPage(
        s,
        '/dashboard/requests',
        'Requests',
        `<p>Every request made with a key of this account, whatever its answer: what your agents sent, what the gate said, and how long it took.
Kept ${Number(list.body.retention_days ?? ctx.config.REQUEST_LOG_RETENTION_DAYS)} days; no body or secret is stored (<a href="/docs/request-log">the request log</a>, also <code>GET /v1/requests</code>).</p>
<form method="get" action="/dashboard/requests" class="row">
<div><label for="f-key">Key</label><select id="f-key" name="key">${option('', 'Every key', q.get('key'))}${keyNames.map((n) => option(n, n, q.get('key'))).join('')}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status">${STATUSES.map(([v, l]) => option(v, l, q.get('status'))).join('')}</select></div>
<div><label for="f-code">Problem code</label><input id="f-code" name="code" value="${s_(q.get('code'))}" placeholder="hop_limit_reached" size="18"></div>
<div><label for="f-path">Path starts with</label><input id="f-path" name="path" value="${s_(q.get('path'))}" placeholder="/v1/fuse" size="14"></div>
<div><button type="submit">Filter</button></div></form>
${off}${refused}${rows ? `<table class="cards-sm requests"><thead><tr><th scope="col">Time (UTC)</th><th scope="col">Key</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Latency</th><th scope="col">Receipt</th></tr></thead><tbody>${rows}</tbody></table>` : refused ? '' : '<p class="muted">No request matches yet. Requests appear here within a second of their answer.</p>'}
<p class="actions">${newest}${older}</p>
<style>table.requests{margin-top:1rem}table.requests tr.failed td:nth-child(4){color:var(--bad,#b91c1c)}table.requests code.id{overflow-wrap:anywhere}</style>`,
      ),
    );
  });
}

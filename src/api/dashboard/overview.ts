/**
 * The dashboard's overview: the first-run guide, then usage at a glance.
 *   GET  /dashboard            the guide (while unfinished) and this period's usage
 *   POST /dashboard/start      makes a fuse and a key for the guide (agent, or operator on request)
 *   GET  /dashboard/progress   the guide's steps as JSON, for the page to tick itself
 *
 * The guide ticks from the ledger, never from clicks: a key exists, a hop
 * receipt exists, a DENY hop receipt exists. Its commands are the Get started
 * page's own (src/site/get-started.ts) with this account's values filled in.
 * Usage is a server-rendered SVG chart (no script) with the same figures in a
 * table, per-key hops against limits, and each key's open operator statement.
 */
import type { H3Event } from 'h3';
import { formatUsd } from '../../catalog/money.ts';
import { ACT_KIND_RULE, SURFACE_PRESETS } from '../../catalog/surfaces.ts';
import { isNapSku } from '../../domain/charge-rules.ts';
import { REFUSALS } from '../../domain/pricing.ts';
import { periodReset, periodStart } from '../../domain/quota.ts';
import { accountChargesByDay, accountChargesBySku, accountReceipts } from '../../ledger/accounts.ts';
import { GET_STARTED } from '../../site/get-started.ts';
import type { AppContext } from '../context.ts';
import { openCheckoutView } from '../gate/operator.ts';
import { escapeHtml as e } from '../html.ts';
import type { Router } from '../router.ts';
import { COPY_SCRIPT, secretPanel, type NewSecret } from './keys-pages.ts';
import { callApi, problemNote } from './pages.ts';
import { PASSKEY_SCRIPT } from './passkeys.ts';
import {
  csrfField,
  dashboardPage,
  flashCookie,
  listedKey,
  page,
  readSession,
  readSignedInForm,
  redirect,
  sessionOwner,
  takeFlash,
  toSignin,
  type Session,
} from './web.ts';

type Row = Record<string, unknown>;

/** The act kinds a hop may name, from the presets (the same list /start prints). */
const actKindsNote = `<p class="muted" id="act-kinds"><code>action.kind</code> names what the agent is about to do: ${e(ACT_KIND_RULE)}. A new key may name any kind of the presets (${Object.entries(
  SURFACE_PRESETS,
)
  .map(([preset, kinds]) => `${e(preset)}: ${kinds.map((k) => `<code>${e(k)}</code>`).join(', ')}`)
  .join(
    '; ',
  )}), or none. Declare a key's own kinds on its page under <a href="/dashboard/keys">Keys</a>, and every other kind is refused: <code>BLOCK</code>, with the kinds it may name in <code>surface</code>.</p>`;
const usd = (micros: number | bigint) => `${formatUsd(micros)} USD`;

/** Colours of the chart's series: distinct, and readable on light and dark backgrounds. */
const SERIES = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626'];

interface DaySku {
  day: string;
  sku: string;
  count: number;
  micros: number;
}

/** A SKU as the tables name it: the NAP hold is what refusals pay, so it says so. */
const skuLabel = (sku: string) => `<code>${e(sku)}</code>${isNapSku(sku) ? ` (refusals: ${REFUSALS.join(', ')})` : ''}`;

/** Every UTC day from `since` to `until` (inclusive), as YYYY-MM-DD. */
function daysBetween(since: string, until: Date): string[] {
  const out: string[] = [];
  for (let t = Date.parse(since.slice(0, 10) + 'T00:00:00Z'); t <= until.getTime() && out.length < 400; t += 86_400_000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

/**
 * A key's reviews of the month on its statement (`reviews` of the open checkout, docs/reviews.md#metering),
 * in one cell since the table is wide already; a count never wraps apart from its word.
 */
function reviewCounts(r: { opened: number; approved: number; denied: number; expired: number }): string {
  return `${r.opened}&nbsp;opened; ${r.approved}&nbsp;approved, ${r.denied}&nbsp;denied, ${r.expired}&nbsp;expired`;
}

/**
 * Charges per day, stacked by SKU, as an SVG that needs no script, and the same
 * figures (acts and amounts per day and SKU) as a table.
 */
export function usageChart(rows: readonly DaySku[], days: readonly string[]): string {
  if (rows.length === 0) return '<p class="muted">No charges this period yet: the chart appears with the first charged act.</p>';
  const skus = [...new Set(rows.map((r) => r.sku))].sort();
  const color = (sku: string) => SERIES[skus.indexOf(sku) % SERIES.length]!;
  const byDay = new Map<string, DaySku[]>();
  for (const r of rows) byDay.set(r.day, [...(byDay.get(r.day) ?? []), r]);
  const max = Math.max(...days.map((d) => (byDay.get(d) ?? []).reduce((a, r) => a + r.micros, 0)), 1);
  const W = 720;
  const H = 200;
  const left = 8;
  const top = 24;
  const bottom = 30;
  const step = (W - left) / Math.max(days.length, 1);
  const bar = Math.max(2, step * 0.7);
  const plot = H - top - bottom;
  const bars = days
    .map((d, i) => {
      let y = H - bottom;
      const x = left + i * step + (step - bar) / 2;
      const rects = (byDay.get(d) ?? [])
        .map((r) => {
          const h = Math.max(1, (r.micros / max) * plot);
          y -= h;
          return `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${bar.toFixed(1)}" height="${h.toFixed(1)}" fill="${color(r.sku)}"><title>${e(d)} ${e(r.sku)}: ${r.count} acts, ${e(usd(r.micros))}</title></rect>`;
        })
        .join('');
      const label =
        days.length <= 16 || i % 5 === 0 || i === days.length - 1
          ? `<text class="day" x="${(x + bar / 2).toFixed(1)}" y="${H - 6}" font-size="11" text-anchor="middle" fill="currentColor">${Number(d.slice(8))}</text>`
          : '';
      return rects + label;
    })
    .join('');
  const axis = `<line x1="${left}" y1="${H - bottom}" x2="${W}" y2="${H - bottom}" stroke="currentColor" stroke-width="1"/>`;
  const legend = skus
    .map(
      (sku) =>
        `<li><svg width="12" height="12" aria-hidden="true"><rect width="12" height="12" fill="${color(sku)}"/></svg> ${skuLabel(sku)}</li>`,
    )
    .join('');
  const table = rows
    .map(
      (r) =>
        `<tr><td>${e(r.day)}</td><td>${skuLabel(r.sku)}</td><td class="num">${r.count}</td><td class="num">${e(usd(r.micros))}</td></tr>`,
    )
    .join('');
  return `<figure class="usage"><svg class="chart" role="img" aria-labelledby="chart-title" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none"><title id="chart-title">Charges per UTC day this period, stacked by SKU; the same figures are in the table below</title>${axis}${bars}</svg>
<figcaption>Charges per UTC day (day of the month below each bar; the highest day ${e(usd(max))}), stacked by SKU:<ul class="inline legend">${legend}</ul></figcaption></figure>
<details><summary>The same figures as a table</summary><table><caption>Acts and charges per day and SKU</caption><thead><tr><th scope="col">Day</th><th scope="col">SKU</th><th scope="col" class="num">Acts</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${table}</tbody></table></details>`;
}

/** Where the guide stands, read from the ledger. */
interface Progress {
  key: boolean;
  hop: boolean;
  deny: boolean;
  /** The latest DENY hop's receipt, to open and verify. */
  receipt: string | null;
  /** The latest PERMIT hop's receipt (the first hop's, while the guide is followed). */
  permit: string | null;
}

export function registerOverview(router: Router, ctx: AppContext): void {
  const app = router.app;

  const progress = async (s: Session, keys: Row[]): Promise<Progress> => {
    const [hop, deny, permit] = await Promise.all([
      accountReceipts(ctx.ledger.read, sessionOwner(s), { kind: 'hop', limit: 1 }),
      accountReceipts(ctx.ledger.read, sessionOwner(s), { kind: 'hop', decision: 'DENY', limit: 1 }),
      accountReceipts(ctx.ledger.read, sessionOwner(s), { kind: 'hop', decision: 'PERMIT', limit: 1 }),
    ]);
    return {
      key: keys.some((k) => listedKey(s, k)),
      hop: hop.length > 0,
      deny: deny.length > 0,
      receipt: deny[0]?.id ?? null,
      permit: permit[0]?.id ?? null,
    };
  };

  /** `operatorFirst`: the visitor came from /start (OPERATOR_GUIDE), whose steps need an operator key. */
  const guide = (s: Session, p: Progress, fuseId: string | undefined, fresh: NewSecret | undefined, operatorFirst: boolean): string => {
    const step = (id: keyof Omit<Progress, 'receipt' | 'permit'>, title: string, body: string) =>
      `<li class="${p[id] ? 'done' : 'todo'}" data-step="${id}"><h3><span class="tick">${p[id] ? 'Done' : 'To do'}</span> ${title}</h3>${body}</li>`;
    const command = (id: string) => GET_STARTED.find((x) => x.id === id)!.command;
    const secret = fresh?.secret ?? "<your key's secret>";
    const fuse = fresh?.fuse_id ?? fuseId;
    const setup = `export BASE='${ctx.config.BASE_URL}' KEY='${secret}' FUSE='${fuse ?? '<a fuse id from the Fuses page>'}'`;
    const agent = `<button type="submit" name="role" value="agent"${operatorFirst ? ' class="secondary"' : ''}>Create an agent key and a fuse</button>`;
    const operator = `<button type="submit" name="role" value="operator"${operatorFirst ? '' : ' class="secondary"'}>Create an operator key and a fuse</button>`;
    const startForm = `<form method="post" action="/dashboard/start">${csrfField(s.csrf)}<p>${operatorFirst ? `${operator} ${agent}` : `${agent} ${operator}`}</p></form>
<p class="muted">An agent key acts and may blow a fuse; an operator key also manages (it is the one to use to follow <a href="/start">Get started</a> as printed, which creates fuses with it).</p>`;
    return `<section aria-labelledby="guide-h"><h2 id="guide-h">Get started</h2>
<ol class="steps" id="guide">
${step('key', 'Create a key and a fuse for it', `${fresh ? secretPanel(fresh) : ''}${p.key ? `<p>You have a key. ${fresh ? '' : 'Secret lost? It is shown only once: rotate the key on its page under <a href="/dashboard/keys">Keys</a> for a new one. '}Make another on <a href="/dashboard/keys">Keys</a>.</p>` : ''}${startForm}`)}
${step(
  'hop',
  'Make the first hop',
  `<p>In a terminal, set these (${fresh ? 'your new secret is filled in' : 'put the secret you stored in KEY'}), then ask the gate before acting. This page notices the hop within seconds.</p>
${actKindsNote}
<pre data-step="setup"><code id="cmd-setup">${e(setup)}</code></pre><pre data-step="hop"><code id="cmd-hop">${e(command('hop'))}</code></pre>
<p><button type="button" data-copy="cmd-setup" hidden>Copy the variables</button> <button type="button" data-copy="cmd-hop" hidden>Copy the hop</button></p>
<p><a id="permit-link" href="${p.permit ? `/verify?id=${e(p.permit)}` : '/verify'}"${p.permit ? '' : ' hidden'}>Verify the PERMIT receipt in your browser</a></p>`,
)}
${step(
  'deny',
  'Blow the fuse and see DENY',
  `<p>Blow the fuse (an agent key may), then hop again: a DEAD fuse fails closed. You can also blow it on <a href="/dashboard/fuses">Fuses</a>.</p>
<pre data-step="blow"><code id="cmd-blow">${e(command('blow'))}</code></pre><p><button type="button" data-copy="cmd-blow" hidden>Copy</button></p>`,
)}
<li data-step="verify"><h3>Open the receipt and verify it</h3><p>Every answer, refusals included, has a signed receipt in the public log. <a id="verify-link" href="${p.receipt ? `/verify?id=${e(p.receipt)}` : '/verify'}"${p.receipt ? '' : ' hidden'}>Verify the DENY receipt in your browser</a><span id="verify-wait"${p.receipt ? ' hidden' : ''}>Its link appears here after the DENY.</span></p></li>
</ol><p id="guide-status" role="status" class="muted"><noscript>This list updates when the page is reloaded: <a href="/dashboard">check again</a>.</noscript></p></section>
<script>
(() => {
  const status = document.getElementById('guide-status');
  const names = { key: 'a key exists', hop: 'your first hop arrived', deny: 'the DENY is in' };
  const tick = async () => {
    let p;
    try { const r = await fetch('/dashboard/progress', { headers: { accept: 'application/json' } }); if (!r.ok) return; p = await r.json(); } catch { return; }
    let changed = false;
    for (const [id, done] of Object.entries(p.steps)) {
      const li = document.querySelector('#guide [data-step="' + id + '"]');
      if (li && done && li.classList.contains('todo')) { li.className = 'done'; li.querySelector('.tick').textContent = 'Done'; status.textContent = 'Done: ' + names[id] + '.'; changed = true; }
    }
    if (p.permit) { const a = document.getElementById('permit-link'); a.href = '/verify?id=' + encodeURIComponent(p.permit); a.hidden = false; }
    // The totals below move with the steps: take them from the page as the server renders it now.
    if (changed) { try { const r = await fetch('/dashboard', { headers: { accept: 'text/html' } }); const fresh = new DOMParser().parseFromString(await r.text(), 'text/html').getElementById('usage'); if (r.ok && fresh) document.getElementById('usage').replaceWith(fresh); } catch {} }
    if (p.receipt) { const a = document.getElementById('verify-link'); a.href = '/verify?id=' + encodeURIComponent(p.receipt); a.hidden = false; document.getElementById('verify-wait').hidden = true; }
    if (!p.steps.deny) setTimeout(tick, 2000);
  };
  setTimeout(tick, 2000);
})();
</script>`;
  };

  const passkeyOffer = `<section class="panel" aria-labelledby="pk-h"><h2 id="pk-h">Sign in with a passkey next time?</h2>
<p>A passkey signs you in with this device's lock (fingerprint, face or PIN) instead of the password. You can add or remove passkeys later under <a href="/dashboard/passkeys">Passkeys</a>.</p>
<label for="passkey-name">Name it</label><input id="passkey-name" name="passkey_name" maxlength="60" value="This device">
<p><button type="button" id="passkey" data-kind="register" hidden>Add a passkey</button></p><p id="passkey-status" role="status"></p>
<noscript><p>Adding a passkey needs JavaScript (the browser's WebAuthn API).</p></noscript>${PASSKEY_SCRIPT}</section>`;

  const usageSection = async (s: Session, keys: Row[]) => {
    const since = periodStart('month');
    const [bySku, byDay] = await Promise.all([
      accountChargesBySku(ctx.ledger.read, s.accountId, since),
      accountChargesByDay(ctx.ledger.read, s.accountId, since),
    ]);
    const total = bySku.reduce((a, r) => a + r.micros, 0);
    const acts = bySku.reduce((a, r) => a + r.count, 0);
    const skuRows = bySku
      .map((r) => `<tr><td>${skuLabel(r.sku)}</td><td class="num">${r.count}</td><td class="num">${e(usd(r.micros))}</td></tr>`)
      .join('');
    const mine = keys.filter((k) => listedKey(s, k) && k.status === 'active');
    const keyRows = mine
      .map((k) => {
        const used = Number(k.hops_used);
        const limit = Number(k.hop_limit);
        return `<tr><td>${e(String(k.name))} <code>${e(String(k.prefix))}…</code></td><td><meter min="0" max="${limit}" value="${Math.min(used, limit)}" aria-label="${e(String(k.name))}: ${used} of ${limit} hops"></meter> ${used} / ${limit} per ${e(String(k.hop_period))}</td></tr>`;
      })
      .join('');
    const hopsTable = keyRows
      ? `<table><thead><tr><th scope="col">Key</th><th scope="col">Hops this period</th></tr></thead><tbody>${keyRows}</tbody></table>`
      : '<p class="muted">No active key yet.</p>';
    // Test keys are billed nothing (docs/test-mode.md): their hops count against their limits, no charge counts.
    if (s.mode === 'test') {
      return `<section id="usage" aria-labelledby="usage-h"><h2 id="usage-h">This period</h2><p>Test mode: the acts of test keys are decided and receipted as live ones and <strong>billed nothing</strong>, so no charge, statement or spend counts here. Switch test mode off for the live account's usage.</p>
<h3>Hops against limits</h3>${hopsTable}</section>`;
    }
    const statements = await Promise.all(mine.slice(0, 20).map(async (k) => ({ k, c: await openCheckoutView(ctx, String(k.id)) })));
    const stmtRows = statements
      .map(
        ({ k, c }) =>
          `<tr><td>${e(String(k.name))}</td><td class="num">${c.hops}</td><td class="num">${e(c.cleared_exposure_usd)}</td><td class="num">${e(c.terms.floor_usd)}</td><td class="num">${e(c.terms.bps_usd)}</td><td class="num">${e(c.terms.per_hop_usd)}</td><td class="num"><strong>${e(c.due_usd)}</strong></td><td class="num">${e(c.charged_usd)}</td><td>${reviewCounts(c.reviews)}</td></tr>`,
      )
      .join('');
    const month = statements[0]?.c.month;
    return `<section id="usage" aria-labelledby="usage-h"><h2 id="usage-h">This period</h2><p>From ${e(since.slice(0, 10))} until ${e((periodReset('month') ?? '').slice(0, 10))} (UTC): <strong>${acts}</strong> charged acts, <strong>${e(usd(total))}</strong> in total.</p>
${usageChart(byDay, daysBetween(since, new Date()))}
<h3>Charges per SKU</h3>${bySku.length ? `<table><thead><tr><th scope="col">SKU</th><th scope="col" class="num">Acts</th><th scope="col" class="num">Amount</th></tr></thead><tbody>${skuRows}</tbody></table>` : '<p class="muted">Nothing charged this period.</p>'}
<h3>Hops against limits</h3>${hopsTable}
<h3>Operator statement${month ? ` for ${e(month)}` : ''}</h3>${
      stmtRows
        ? `<table><thead><tr><th scope="col">Key</th><th scope="col" class="num">Hops</th><th scope="col" class="num">Cleared exposure</th><th scope="col" class="num">Floor</th><th scope="col" class="num">${statements[0]!.c.bps} bps</th><th scope="col" class="num">Per hop</th><th scope="col" class="num">Due</th><th scope="col" class="num">Charged so far</th><th scope="col">Reviews</th></tr></thead><tbody>${stmtRows}</tbody></table>
<p class="muted" id="due-explained"><strong>Due</strong> is the month's minimum: ${e(statements[0]!.c.formula)} (USD). <strong>Charged so far</strong> is what the key's acts have already paid this month, so the month's checkout (<code>POST /v1/operator/checkout</code>) charges only what Due is above it, and nothing when it is not. See <a href="/pricing">Pricing</a>.
Reviews are the key's held requests put to a person: opened this month, and approved, denied or expired this month (<a href="/dashboard/reviews">the queue</a>); a review costs nothing of its own.</p>`
        : '<p class="muted">No statement yet: it starts with a key.</p>'
    }</section>`;
  };

  app.get('/dashboard', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return toSignin(event);
    const [keysAnswer, fusesAnswer] = await Promise.all([
      callApi(app, ctx, s, 'GET', '/v1/keys'),
      callApi(app, ctx, s, 'GET', '/v1/fuses?limit=1'),
    ]);
    const keys = (keysAnswer.body.data ?? []) as Row[];
    const fuseId = ((fusesAnswer.body.data ?? []) as Row[])[0]?.fuse_id as string | undefined;
    const p = await progress(s, keys);
    const flash = takeFlash<NewSecret>(event, ctx);
    const created = event.url.searchParams.get('created');
    const fresh = flash.data && flash.data.id === created ? flash.data : undefined;
    const welcome = event.url.searchParams.get('welcome') === '1';
    const operatorFirst = event.url.searchParams.get('key') === 'operator';
    const finished = p.key && p.hop && p.deny;
    const body = `${welcome ? passkeyOffer : ''}${
      finished && !fresh
        ? `<details><summary>Get started: every step done</summary>${guide(s, p, fuseId, fresh, operatorFirst)}</details>`
        : guide(s, p, fuseId, fresh, operatorFirst)
    }${await usageSection(s, keys)}${COPY_SCRIPT}`;
    return page(dashboardPage(s, '/dashboard', 'Overview', body), 200, flash.clear);
  });

  app.get('/dashboard/progress', async (event) => {
    const s = await readSession(event, ctx);
    const headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
    if (!s) return new Response(JSON.stringify({ signed_in: false }), { status: 401, headers });
    const keys = (await callApi(app, ctx, s, 'GET', '/v1/keys')).body.data as Row[];
    const p = await progress(s, keys ?? []);
    return new Response(JSON.stringify({ steps: { key: p.key, hop: p.hop, deny: p.deny }, receipt: p.receipt, permit: p.permit }), {
      headers,
    });
  });

  app.post('/dashboard/start', async (event: H3Event) => {
    const posted = await readSignedInForm(event, ctx);
    if (!posted) return redirect('/signin');
    const { session: s, form } = posted;
    const role = form.get('role') === 'operator' ? 'operator' : 'agent';
    const fuse = await callApi(app, ctx, s, 'POST', '/v1/fuses', { label: `first fuse (${role} key)` });
    const fail = (a: { status: number; body: Row }) =>
      page(dashboardPage(s, '/dashboard', 'Overview', `${problemNote(a)}<p><a href="/dashboard">Back</a></p>`), a.status);
    if (fuse.status !== 201) return fail(fuse);
    const key = await callApi(app, ctx, s, 'POST', '/v1/keys', { name: `first ${role} key`, role });
    if (key.status !== 201) return fail(key);
    const flash: NewSecret = {
      kind: 'created',
      id: String(key.body.id),
      name: String(key.body.name),
      role,
      secret: String(key.body.secret),
      fuse_id: String(fuse.body.fuse_id),
    };
    return redirect(`/dashboard?created=${encodeURIComponent(flash.id)}`, [flashCookie(event, ctx, flash)]);
  });
}

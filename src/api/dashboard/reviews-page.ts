/**
 * /dashboard/reviews (issue 47, docs/reviews.md): the account's review queue,
 * its pending count in the heading, each held request with what was asked,
 * the rule that held it and an approve or deny with a note; then the latest
 * answered. Listing is the API call (/v1/reviews) dispatched in-process as the
 * account's dashboard key; an answer is the same act as the API's, recorded
 * as the signed-in person (`{kind: "person", id: email}`, committed in its
 * receipt). Every post answers with a redirect, so a reload never posts twice.
 */
import type { H3Event } from 'h3';
import { askedOf, REVIEW_NOTE_MAX } from '../../domain/review.ts';
import type { AppContext } from '../context.ts';
import { answerReview } from '../gate/reviews.ts';
import { escapeHtml as e } from '../html.ts';
import { Problem } from '../problem.ts';
import type { Router } from '../router.ts';
import { callApi } from './pages.ts';
import { recordAudit } from '../audit.ts';
import { allows } from '../../domain/team-roles.ts';
import { csrfField, dashboardPage, page, readSession, readSignedInForm, redirect, requireRole, type Session } from './web.ts';

type Row = Record<string, unknown>;
const s_ = (v: unknown) => e(v === null || v === undefined ? '' : String(v));
const ID = /^rev_[A-Za-z0-9_-]{1,64}$/;

/** What was asked, in one line (askedOf), and where: the rail of a transfer, else the fuse. */
function asked(summary: Row): string {
  const where = summary.transfer ? ` on ${s_(summary.rail)}` : ` on fuse <code class="id">${s_(summary.fuse_id)}</code>`;
  return `${e(askedOf(summary))}${where}`;
}

/** Of a review that needs two approvers: how many it has, and whose. */
function approvalsLine(r: Row): string {
  if (r.approvals_required !== 2) return '';
  const given = (r.approvals ?? []) as Row[];
  const who = given.map((a) => `<code class="id">${s_((a.decided_by as Row).id)}</code>`).join(', ');
  return `\n<dt>Approvals</dt><dd>${given.length} of 2 (two different reviewers)${who ? `: ${who}` : ''}</dd>`;
}

/** Of a PAS-A pre-bind: the manual-underwriting issue this review answers. */
function issueLine(summary: Row): string {
  const issue = summary.issue as Row | undefined;
  return issue ? `\n<dt>Answers</dt><dd>manual-underwriting issue <code class="id">${s_(issue.issue_id)}</code></dd>` : '';
}

function pendingItem(r: Row, s: Session): string {
  const id = s_(r.id);
  const summary = (r.summary ?? {}) as Row;
  const requester = (r.requested_by as Row | undefined)?.key_id;
  const own = requester === s.key.id;
  return `<li class="review" id="${id}"><h3>${asked(summary)}</h3>
<dl><dt>Held by</dt><dd><code>${s_(summary.rule)}</code>: ${s_(summary.detail ?? summary.reason)}</dd>
<dt>Operation</dt><dd>${s_(r.operation)}${summary.tool ? `, tool <code>${s_(summary.tool)}</code>` : ''}</dd>${issueLine(summary)}
<dt>Asked by key</dt><dd><code class="id">${s_(requester)}</code></dd>
<dt>Expires</dt><dd>${s_(r.expires_at)}</dd>${approvalsLine(r)}
<dt>Review</dt><dd><code class="id">${id}</code>, HOLD receipt <a href="/v1/receipts/${s_(r.hold_receipt_id)}"><code class="id">${s_(r.hold_receipt_id)}</code></a></dd></dl>
${
  own
    ? '<p class="muted">This request was made with the dashboard\'s own key: another operator must answer it (four eyes).</p>'
    : !allows(s.role, 'operator')
      ? '<p class="muted">An operator or owner of the account answers it.</p>'
      : `<form method="post" action="/dashboard/reviews/${id}">${csrfField(s.csrf)}
<label for="note-${id}">Note (optional, kept private to this account; the public receipt holds only its commitment)</label>
<textarea id="note-${id}" name="note" maxlength="${REVIEW_NOTE_MAX}" rows="2"></textarea>
<p class="actions"><button type="submit" name="verdict" value="approve" aria-label="Approve ${id}">Approve</button>
<button type="submit" name="verdict" value="deny" class="danger" aria-label="Deny ${id}">Deny</button></p></form>`
}</li>`;
}

function answeredRow(r: Row): string {
  const by = r.decided_by as Row | null;
  return `<tr><td data-label="Review"><code class="id">${s_(r.id)}</code></td><td data-label="Asked">${asked((r.summary ?? {}) as Row)}</td>
<td data-label="State"><strong>${s_(r.state)}</strong></td><td data-label="By">${by ? `${s_(by.kind)} ${s_(by.id)}` : '—'}</td>
<td data-label="Note">${s_(r.note ?? '')}</td><td data-label="Receipt">${r.decision_receipt_id ? `<a href="/v1/receipts/${s_(r.decision_receipt_id)}"><code class="id">${s_(r.decision_receipt_id)}</code></a>` : ''}</td></tr>`;
}

export function registerReviewsPage(router: Router, ctx: AppContext): void {
  const app = router.app;

  const reviewsPage = async (s: Session, note = '', status = 200) => {
    const [pending, all] = await Promise.all([
      callApi(app, ctx, s, 'GET', '/v1/reviews?state=pending&limit=200'),
      callApi(app, ctx, s, 'GET', '/v1/reviews?limit=50'),
    ]);
    const queue = ((pending.body.data ?? []) as Row[]).map((r) => pendingItem(r, s)).join('');
    const answered = ((all.body.data ?? []) as Row[])
      .filter((r) => r.state !== 'pending')
      .map(answeredRow)
      .join('');
    const count = Number(pending.body.pending_count ?? 0);
    return page(
      dashboardPage(
        s,
        '/dashboard/reviews',
        `Reviews: ${count} pending`,
        `${note}<p>A HOLD asks a person: an agent's request held for review waits here until someone of this account approves or denies it.
An approval lets that very request through once; every answer is a signed receipt in the public log (<a href="/docs/reviews">how reviews work</a>).</p>
<h2>Waiting for an answer</h2>${queue ? `<ol class="reviews">${queue}</ol>` : '<p class="muted">Nothing is waiting for you.</p>'}
<h2>Answered or expired</h2>${answered ? `<table class="cards-sm"><thead><tr><th scope="col">Review</th><th scope="col">Asked</th><th scope="col">State</th><th scope="col">By</th><th scope="col">Note</th><th scope="col">Receipt</th></tr></thead><tbody>${answered}</tbody></table>` : '<p class="muted">None yet.</p>'}
<style>ol.reviews{list-style:none;padding:0}ol.reviews li{border:1px solid var(--line,#d1d5db);border-radius:.5rem;padding:.25rem 1rem;margin:.75rem 0}
ol.reviews h3{margin:.5rem 0;font-size:1.05rem}ol.reviews dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:.3rem 0}
ol.reviews dt{font-weight:600}ol.reviews dd{margin:0}textarea{width:100%;max-width:40rem;box-sizing:border-box;font:inherit}
code.id{overflow-wrap:anywhere}@media (max-width:40rem){ol.reviews dl{grid-template-columns:1fr}}</style>`,
      ),
      status,
    );
  };

  const notice = (text: string) => `<p class="notice" role="status">${e(text)}</p>`;

  app.get('/dashboard/reviews', async (event) => {
    const s = await readSession(event, ctx);
    if (!s) return redirect('/signin');
    const q = event.url.searchParams;
    const [verdict, id] = [q.get('answered') ?? '', q.get('review') ?? ''];
    const note =
      ID.test(id) && (verdict === 'approved' || verdict === 'denied')
        ? notice(`Review ${id} ${verdict}: the agent waiting on it is told at once.`)
        : '';
    return reviewsPage(s, note);
  });

  app.post('/dashboard/reviews/:review_id', async (event: H3Event) => {
    const p = await readSignedInForm(event, ctx);
    if (!p) return redirect('/signin');
    requireRole(p.session, 'operator', 'Answering a review');
    const id = String(event.context.params?.review_id ?? '');
    const verdict = p.form.get('verdict');
    const text = (p.form.get('note') ?? '').trim();
    if (verdict !== 'approve' && verdict !== 'deny')
      return reviewsPage(p.session, '<p class="error" role="alert">Choose Approve or Deny.</p>', 400);
    if (text.length > REVIEW_NOTE_MAX)
      return reviewsPage(p.session, `<p class="error" role="alert">A note is at most ${REVIEW_NOTE_MAX} characters.</p>`, 400);
    const to = verdict === 'approve' ? 'approved' : 'denied';
    try {
      await answerReview(event, ctx, p.session.key, id, to, { kind: 'person', id: p.session.email }, text || undefined);
      await recordAudit(ctx, p.session, `review.${to}`, id);
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      return reviewsPage(p.session, `<p class="error" role="alert">${e(err.detail ?? err.message)}</p>`, err.status);
    }
    return redirect(`/dashboard/reviews?answered=${to}&review=${encodeURIComponent(id)}`);
  });
}

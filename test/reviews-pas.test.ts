/**
 * Reviews of PAS-A pre-bind (issue 47, docs/reviews.md) through the real
 * server: a HOLD (a manual-underwriting issue) opens one review per held
 * request, the review names the issue and the issue names the review, and an
 * approval lets through only what the rules allow: the same pre-bind once its
 * licence is LIVE and its fuse permits the hop, once. A fact that fails closed
 * (licence not LIVE, DEAD fuse, bind-and-issue, a job already bound) keeps its
 * HOLD or BLOCK and leaves the approval unused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getReceipt } from '../src/ledger/receipts.ts';
import { chargesOf } from './support/ledger-reads.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const WRITE = { op: 'bind', policy: 'P-2201', premium: '8400.00' };

interface Held {
  decision: string;
  next_step: string;
  review_id: string;
  review_url: string;
  review_expires_at: string;
  receipt_id: string;
  issue: { issue_id: string; code: string; review_id: string; review_url: string };
}

describe('reviews of PAS-A pre-bind: the underwriter answers the manual-underwriting issue', () => {
  let s: TestServer;
  let hook: Receiver;
  let op: { id: string; secret: string; accountId: string };
  let agent: { id: string; secret: string; accountId: string };
  let liveFuse: string;
  let seq = 0;
  const uniq = (p: string) => `${p}_${++seq}_${Math.random().toString(36).slice(2, 8)}`;

  beforeAll(async () => {
    hook = await startReceiver();
    s = await startTestServer({ WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', DEMO_RATE_LIMIT: '1000' });
    op = await s.newKey('underwriting');
    agent = await s.newKey('pas-agent', undefined, 'agent', op.accountId);
    liveFuse = (await (await s.fetch('/v1/fuses', { key: op.secret, json: { state: 'LIVE' } })).json()).fuse_id;
  });
  afterAll(async () => {
    await s?.stop();
    await hook?.close();
  });

  const preBind = (json: Record<string, unknown>) => s.fetch('/v1/pas/pas-a/pre-bind', { key: agent.secret, json });
  const held = async (json: Record<string, unknown>): Promise<Held> => {
    const r = await preBind(json);
    expect(r.status).toBe(409);
    const body = (await r.json()) as Held;
    expect(body).toMatchObject({ decision: 'HOLD', next_step: 'manual_underwriting' });
    return body;
  };
  const review = async (id: string) => (await s.fetch(`/v1/reviews/${id}`, { key: agent.secret })).json();
  const answer = async (id: string, verb: 'approve' | 'deny', note?: string) => {
    const r = await s.fetch(`/v1/reviews/${id}/${verb}`, { key: op.secret, json: note ? { note } : {} });
    expect(r.status).toBe(200);
  };
  const charge = async (licenseId: string) =>
    expect((await s.fetch(`/v1/pas/licenses/${licenseId}/charge`, { key: op.secret, method: 'POST' })).status).toBe(200);
  const request = (over: Record<string, unknown> = {}) => ({
    fuse_id: liveFuse,
    license_id: uniq('lic'),
    job_id: uniq('job'),
    write: WRITE,
    ...over,
  });
  const chargeCount = async () => (await chargesOf(s.ctx.ledger.read, agent.id)).length;

  it('opens one review per held pre-bind, linked both ways to its manual-underwriting issue, told by webhook', async () => {
    expect((await s.fetch('/v1/alerts', { key: op.secret, json: { url: hook.url('/pas'), events: ['review.opened'] } })).status).toBe(201);
    const req = request();
    const first = await held(req);
    expect(first.review_id).toMatch(/^rev_/);
    expect(first).toMatchObject({
      review_url: `${s.config.BASE_URL}/v1/reviews/${first.review_id}`,
      issue: { code: 'license_not_live', review_id: first.review_id, review_url: first.review_url },
    });
    expect(Date.parse(first.review_expires_at)).toBeGreaterThan(Date.now());

    // A retry of the same request answers with the same review and the same issue; another job opens another.
    const again = await held(req);
    expect(again.receipt_id).not.toBe(first.receipt_id);
    expect(again.review_id).toBe(first.review_id);
    expect(again.issue.issue_id).toBe(first.issue.issue_id);
    const other = await held({ ...req, job_id: uniq('job') });
    expect(other.review_id).not.toBe(first.review_id);
    expect(other.issue.issue_id).not.toBe(first.issue.issue_id);

    const r = await review(first.review_id);
    expect(r).toMatchObject({
      state: 'pending',
      operation: 'pas_pre_bind_a',
      hold_receipt_id: first.receipt_id,
      requested_by: { key_id: agent.id },
      approvals_required: 1,
    });
    expect(r.summary).toMatchObject({
      fuse_id: liveFuse,
      license_id: req.license_id,
      job_id: req.job_id,
      scope: 'bind_only',
      rule: 'license_not_live',
      issue: { issue_id: first.issue.issue_id },
    });
    expect((await getReceipt(s.ctx.ledger.read, first.receipt_id))!.payload).toMatchObject({
      kind: 'pas_pre_bind_a',
      decision: 'HOLD',
      data: { code: 'license_not_live', review_id: first.review_id },
    });
    expect((await getReceipt(s.ctx.ledger.read, r.opened_receipt_id))!.payload).toMatchObject({
      kind: 'review_opened',
      data: { review_id: first.review_id, operation: 'pas_pre_bind_a' },
    });

    // The issue is stored once, naming the review that answers it.
    const issues = await s.ctx.ledger.read.execute({
      sql: 'SELECT id, review_id, reason FROM pas_issues WHERE job_id = ?',
      args: [req.job_id],
    });
    expect(issues.rows.map((x) => ({ ...x }))).toEqual([
      { id: first.issue.issue_id, review_id: first.review_id, reason: 'license_not_live' },
    ]);

    await hook.arrived(2, '/pas');
    const told = hook.on('/pas').map((c) => JSON.parse(c.body) as { type: string; data: { review_id: string; operation: string } });
    expect(told.map((e) => e.data.review_id).sort()).toEqual([first.review_id, other.review_id].sort());
    expect(told.every((e) => e.type === 'review.opened' && e.data.operation === 'pas_pre_bind_a')).toBe(true);
  });

  it('keeps the HOLD while the licence is not LIVE, then issues the ticket once it is, using the approval once', async () => {
    const req = request();
    const h = await held(req);
    expect(await (await preBind({ ...req, review_id: h.review_id })).json()).toMatchObject({ status: 409, code: 'review_pending' });
    await answer(h.review_id, 'approve', 'referral cleared');

    // The approval does not make the licence LIVE: still HOLD, charged the NAP hold, the approval unused.
    const before = await chargeCount();
    const still = await held({ ...req, review_id: h.review_id });
    expect(still).toMatchObject({ review_id: h.review_id, issue: { issue_id: h.issue.issue_id, code: 'license_not_live' } });
    expect(await chargeCount()).toBe(before + 1);
    expect(await review(h.review_id)).toMatchObject({ state: 'approved', used_at: null });

    // Another request cannot use it.
    expect(await (await preBind({ ...req, write: { ...WRITE, premium: '9000.00' }, review_id: h.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_mismatch',
    });
    expect(await (await preBind({ ...req, job_id: uniq('job'), review_id: h.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_mismatch',
    });

    await charge(req.license_id);
    const allowed = await preBind({ ...req, review_id: h.review_id });
    expect(allowed.status).toBe(200);
    const a = await allowed.json();
    expect(a).toMatchObject({
      decision: 'ALLOW',
      next_step: 'bind_only_ticket',
      ticket: { scope: 'bind_only', job_id: req.job_id },
      review: { review_id: h.review_id, hold_receipt_id: h.receipt_id, approved_by: { kind: 'key', id: op.id } },
    });
    const decided = await review(h.review_id);
    expect(decided).toMatchObject({ state: 'approved', used_receipt_id: a.receipt_id });
    expect((await getReceipt(s.ctx.ledger.read, a.receipt_id))!.payload.data).toMatchObject({
      review: { review_id: h.review_id, hold_receipt_id: h.receipt_id, approval_receipt_id: decided.decision_receipt_id },
    });
    // The ticket's receipt document carries the chain HOLD -> approval.
    const doc = await (await s.fetch(`/v1/receipts/${a.receipt_id}`, { headers: { accept: 'application/json' } })).json();
    expect(doc.review_chain.hold.payload).toMatchObject({
      receipt_id: h.receipt_id,
      kind: 'pas_pre_bind_a',
      decision: 'HOLD',
      data: { review_id: h.review_id },
    });
    expect(doc.review_chain.approval.payload).toMatchObject({ receipt_id: decided.decision_receipt_id, kind: 'review_approved' });

    const n = await chargeCount();
    expect(await (await preBind({ ...req, review_id: h.review_id })).json()).toMatchObject({ status: 409, code: 'review_used' });
    expect(await chargeCount()).toBe(n);
  });

  it('never lets an approval through a fact that fails closed: DEAD fuse, bind-and-issue, a job already bound', async () => {
    const deadFuse = (await (await s.fetch('/v1/fuses', { key: op.secret, json: { state: 'LIVE' } })).json()).fuse_id;
    expect((await s.fetch(`/v1/fuses/${deadFuse}/dead`, { key: op.secret, method: 'POST' })).status).toBe(200);
    const live = uniq('lic');
    await charge(live);

    const dead = request({ fuse_id: deadFuse, license_id: live });
    const d = await held(dead);
    expect(d.issue.code).toBe('hop_deny');
    await answer(d.review_id, 'approve');
    expect(await held({ ...dead, review_id: d.review_id })).toMatchObject({ issue: { code: 'hop_deny' }, review_id: d.review_id });

    const both = request({ license_id: live, scope: 'bind_and_issue' });
    const b = await held(both);
    expect(b.issue.code).toBe('bind_and_issue_not_granted');
    await answer(b.review_id, 'approve');
    const stillHeld = await held({ ...both, review_id: b.review_id });
    expect(stillHeld).toMatchObject({ bind_and_issue: false, issue: { code: 'bind_and_issue_not_granted' } });
    expect((stillHeld as unknown as { ticket?: unknown }).ticket).toBeUndefined();
    // The bind-only request is another request: the approval of bind-and-issue is not its.
    expect(await (await preBind({ ...both, scope: 'bind_only', review_id: b.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_mismatch',
    });

    // Approved while the licence was UNSIGNED; meanwhile the job was bound by another write: BLOCK stands.
    const unsigned = uniq('lic');
    const bound = request({ license_id: unsigned });
    const j = await held(bound);
    await answer(j.review_id, 'approve');
    await charge(unsigned);
    const otherWrite = { ...WRITE, policy: 'P-2202' };
    const t = await (await preBind({ ...bound, write: otherWrite })).json();
    expect(t.decision).toBe('ALLOW');
    const redeemed = await s.fetch('/v1/pas/bind-ticket/redeem', {
      key: agent.secret,
      json: { ticket_id: t.ticket.ticket_id, write: otherWrite, now: new Date().toISOString() },
    });
    expect(redeemed.status).toBe(200);
    const blocked = await preBind({ ...bound, review_id: j.review_id });
    expect(blocked.status).toBe(403);
    expect(await blocked.json()).toMatchObject({ decision: 'BLOCK', code: 'already_bound' });

    for (const id of [d.review_id, b.review_id, j.review_id]) expect(await review(id)).toMatchObject({ state: 'approved', used_at: null });
  });

  it('answers a denied review with review_denied, charging and writing nothing', async () => {
    const req = request();
    const h = await held(req);
    await answer(h.review_id, 'deny', 'outside appetite');
    await charge(req.license_id);
    const n = await chargeCount();
    const r = await preBind({ ...req, review_id: h.review_id });
    expect(r.status).toBe(409);
    expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(await r.json()).toMatchObject({ code: 'review_denied', review_id: h.review_id, state: 'denied' });
    expect(await chargeCount()).toBe(n);
  });

  it('opens no review for the public demo, and refuses review_id there', async () => {
    const demo = await s.fetch('/demo/pas/pas-a/pre-bind', { json: { license_id: 'lic_drill_dead' } });
    expect(demo.status).toBe(409);
    const body = await demo.json();
    expect(body).toMatchObject({ decision: 'HOLD', next_step: 'manual_underwriting' });
    expect(body.review_id).toBeUndefined();
    expect((await s.fetch('/demo/pas/pas-a/pre-bind', { json: { license_id: 'lic_drill_dead', review_id: 'rev_x' } })).status).toBe(400);
  });
});

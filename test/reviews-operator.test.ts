/**
 * Reviews (docs/reviews.md) through the real server, with the operator's
 * settings: above REVIEW_TWO_APPROVERS_ABOVE_USD a review needs two distinct
 * approvers (neither the requesting key), a deny at any point denies, and the
 * held request goes on only after the second approval; a key's own review
 * expiry, under a mandate's; a key's reviews on its operator statement.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getReceipt } from '../src/ledger/receipts.ts';
import { getReview, monthReviews } from '../src/ledger/reviews.ts';
import { sweepReviews } from '../src/api/gate/reviews.ts';
import { monthOf } from '../src/domain/clear.ts';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { formClient } from './support/form-client.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const TRANSFER = {
  amount: '125.00',
  currency: 'USD',
  account_number: '000123456789',
  routing_number: '021000021',
  counterparty: 'ACME Supplies LLC',
};
const HELD = { rail: 'rtp', transfer: TRANSFER, context: { review_requested: true } };

interface Approval {
  decided_by: { kind: string; id: string };
  receipt_id: string;
  note: string | null;
}

describe('reviews: two approvers above an amount', () => {
  let s: TestServer;
  let op: { id: string; secret: string; accountId: string };
  let op2: { id: string; secret: string; accountId: string };
  let op3: { id: string; secret: string; accountId: string };
  let agent: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    s = await startTestServer({ REVIEW_TWO_APPROVERS_ABOVE_USD: '1000.00', CLEARING_INTERVAL_HOURS: '0' });
    op = await s.newKey('ops');
    op2 = await s.newKey('ops-2', undefined, 'operator', op.accountId);
    op3 = await s.newKey('ops-3', undefined, 'operator', op.accountId);
    agent = await s.newKey('agent', undefined, 'agent', op.accountId);
  });
  afterAll(async () => {
    await s?.stop();
  });

  const evaluate = (json: unknown, key = agent.secret) => s.fetch('/v1/prefinality/evaluate', { key, json });
  const answer = (id: string, verb: 'approve' | 'deny', key: string, json: unknown = {}) =>
    s.fetch(`/v1/reviews/${id}/${verb}`, { key, json });
  const hold = async (amount: string, currency = 'USD') => {
    const held = { ...HELD, transfer: { ...TRANSFER, amount, currency } };
    const r = await evaluate(held);
    expect(r.status).toBe(409);
    const body = (await r.json()) as { review_id: string; receipt_id: string };
    return { ...body, held };
  };
  const review = async (id: string) => (await s.fetch(`/v1/reviews/${id}`, { key: agent.secret })).json();

  it('needs one approval at or below the amount', async () => {
    const h = await hold('1000.00');
    expect(await review(h.review_id)).toMatchObject({ approvals_required: 1, approvals: [] });
    expect(await (await answer(h.review_id, 'approve', op2.secret)).json()).toMatchObject({
      state: 'approved',
      approvals: [{ decided_by: { kind: 'key', id: op2.id } }],
    });
    expect((await evaluate({ ...h.held, review_id: h.review_id })).status).toBe(200);
  });

  it('above it, stays pending after the first approval and approves on a second, distinct approver', async () => {
    const h = await hold('1000.01');
    expect(await review(h.review_id)).toMatchObject({ state: 'pending', approvals_required: 2, approvals: [] });

    const first = await answer(h.review_id, 'approve', op2.secret, { note: 'first look' });
    expect(first.status).toBe(200);
    const one = await first.json();
    expect(one).toMatchObject({
      state: 'pending',
      approvals_required: 2,
      decided_by: null,
      approvals: [{ decided_by: { kind: 'key', id: op2.id }, note: 'first look', receipt_id: one.receipt_id }],
    });
    const firstReceipt = (await getReceipt(s.ctx.ledger.read, one.receipt_id))!.payload;
    expect(firstReceipt).toMatchObject({
      kind: 'review_first_approval',
      decision: 'PERMIT',
      subject: h.review_id,
      key_id: op2.id,
      data: { review_id: h.review_id, hold_receipt_id: h.receipt_id, approvals_required: 2 },
    });
    expect(JSON.stringify(firstReceipt)).not.toContain('first look');

    // Not yet cleared; the first approver may not give the second; the requesting key never answers.
    expect(await (await evaluate({ ...h.held, review_id: h.review_id })).json()).toMatchObject({ status: 409, code: 'review_pending' });
    expect(await (await answer(h.review_id, 'approve', op2.secret)).json()).toMatchObject({
      status: 403,
      code: 'second_approver_required',
    });
    expect((await answer(h.review_id, 'approve', agent.secret)).status).toBe(403);
    expect((await review(h.review_id)).approvals).toHaveLength(1);

    const second = await (await answer(h.review_id, 'approve', op3.secret, { note: 'second look' })).json();
    expect(second).toMatchObject({ state: 'approved', decided_by: { kind: 'key', id: op3.id }, note: 'second look' });
    expect((second.approvals as Approval[]).map((a) => a.decided_by.id)).toEqual([op2.id, op3.id]);
    const secondReceipt = (await getReceipt(s.ctx.ledger.read, second.receipt_id))!.payload;
    expect(secondReceipt).toMatchObject({
      kind: 'review_approved',
      decision: 'PERMIT',
      key_id: op3.id,
      data: { approvals_required: 2, first_approval_receipt_id: one.receipt_id },
    });
    expect(await (await answer(h.review_id, 'approve', op.secret)).json()).toMatchObject({ status: 409, code: 'review_decided' });

    const go = await evaluate({ ...h.held, review_id: h.review_id });
    expect(go.status).toBe(200);
    expect(await go.json()).toMatchObject({ decision: 'GO', review: { review_id: h.review_id, approved_by: { kind: 'key', id: op3.id } } });
  });

  it('is denied by a deny after the first approval, or before it', async () => {
    const after = await hold('5000.00');
    expect((await answer(after.review_id, 'approve', op2.secret)).status).toBe(200);
    // The first approver may still deny: a deny at any point denies.
    expect(await (await answer(after.review_id, 'deny', op2.secret, { note: 'changed my mind' })).json()).toMatchObject({
      state: 'denied',
      decided_by: { kind: 'key', id: op2.id },
    });
    expect(await (await answer(after.review_id, 'approve', op3.secret)).json()).toMatchObject({
      status: 409,
      code: 'review_decided',
      state: 'denied',
    });
    expect(await (await evaluate({ ...after.held, review_id: after.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_denied',
    });

    const before = await hold('6000.00');
    expect(await (await answer(before.review_id, 'deny', op3.secret)).json()).toMatchObject({
      state: 'denied',
      approvals_required: 2,
      approvals: [],
    });
  });

  it('shows the approvals so far in the dashboard, where a signed-in person gives the second', async () => {
    const person = formClient(s);
    expect((await person.post('/signup', { email: 'second@example.invalid', password: 'correct horse battery staple' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'second@example.invalid'))!.account_id;
    const payer = await s.newKey('payer', undefined, 'agent', accountId);
    const first = await s.newKey('first', undefined, 'operator', accountId);
    const r = await evaluate({ ...HELD, transfer: { ...TRANSFER, amount: '7000.00' } }, payer.secret);
    const { review_id } = (await r.json()) as { review_id: string };
    expect((await answer(review_id, 'approve', first.secret)).status).toBe(200);

    const queue = await (await person.get('/dashboard/reviews')).text();
    expect(queue).toContain('1 of 2 (two different reviewers)');
    expect(queue).toContain(first.id);
    expect((await person.post(`/dashboard/reviews/${review_id}`, { verdict: 'approve', note: '' })).status).toBe(303);
    const after = (await (await s.fetch(`/v1/reviews/${review_id}`, { key: first.secret })).json()) as {
      state: string;
      approvals: Approval[];
    };
    expect(after.state).toBe('approved');
    expect(after.approvals.map((x) => x.decided_by)).toEqual([
      { kind: 'key', id: first.id },
      { kind: 'person', id: 'second@example.invalid' },
    ]);
  });

  it('counts an amount in another currency as above it (no rate to compare by)', async () => {
    const h = await hold('10.00', 'EUR');
    expect(await review(h.review_id)).toMatchObject({ approvals_required: 2 });
  });

  it('holds the execute gate above it the same way', async () => {
    const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'payouts' } })).json();
    const act = { fuse_id: fuse.fuse_id, action: { kind: 'pay' }, exposure_usd: '2500.00', hold_above_usd: '100.00' };
    const r = await s.fetch('/api/v1/execute-gate', { key: agent.secret, json: act });
    const held = await r.json();
    expect(held).toMatchObject({ decision: 'HOLD', rule: 'above_hold' });
    expect(await review(held.review_id)).toMatchObject({ operation: 'execute_gate', approvals_required: 2 });
  });
});

describe("reviews: a key's own review expiry", () => {
  let s: TestServer;
  let op: { id: string; secret: string; accountId: string };
  let stranger: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0' });
    op = await s.newKey('ops');
    stranger = await s.newKey('stranger');
  });
  afterAll(async () => {
    await s?.stop();
  });

  /** How long the review a HOLD of `secret` opens waits, in seconds. */
  const waitOf = async (secret: string, amount: string, mandate?: Record<string, unknown>): Promise<number> => {
    const r = await s.fetch('/v1/prefinality/evaluate', {
      key: secret,
      json: { ...HELD, transfer: { ...TRANSFER, amount }, ...(mandate ? { mandate } : {}) },
    });
    expect(r.status).toBe(409);
    const { review_id } = (await r.json()) as { review_id: string };
    const review = (await (await s.fetch(`/v1/reviews/${review_id}`, { key: op.secret })).json()) as {
      created_at: string;
      expires_at: string;
    };
    return (Date.parse(review.expires_at) - Date.parse(review.created_at)) / 1000;
  };

  it('is set at creation and changed later; a mandate still wins, null goes back to REVIEW_TTL_SECONDS', async () => {
    const created = await s.fetch('/v1/keys', { key: op.secret, json: { name: 'payments agent', review_expires_in_seconds: 600 } });
    expect(created.status).toBe(201);
    const agent = (await created.json()) as { id: string; secret: string; review_expires_in_seconds: number | null };
    expect(agent.review_expires_in_seconds).toBe(600);
    expect(await waitOf(agent.secret, '201.00')).toBe(600);
    expect(await waitOf(agent.secret, '202.00', { review_expires_in_seconds: 3600 })).toBe(3600);

    const set = await s.fetch(`/v1/keys/${agent.id}/reviews`, { key: op.secret, json: { review_expires_in_seconds: 120 } });
    expect(await set.json()).toMatchObject({ id: agent.id, review_expires_in_seconds: 120 });
    expect(await waitOf(agent.secret, '203.00')).toBe(120);

    expect(
      await (await s.fetch(`/v1/keys/${agent.id}/reviews`, { key: op.secret, json: { review_expires_in_seconds: null } })).json(),
    ).toMatchObject({ review_expires_in_seconds: null });
    expect(await waitOf(agent.secret, '204.00')).toBe(86_400);
  });

  it('refuses a wait out of bounds, an agent key and another account, changing nothing', async () => {
    const agent = (await (
      await s.fetch('/v1/keys', { key: op.secret, json: { name: 'agent', review_expires_in_seconds: 900 } })
    ).json()) as { id: string; secret: string };
    const short = await s.fetch(`/v1/keys/${agent.id}/reviews`, { key: op.secret, json: { review_expires_in_seconds: 10 } });
    expect(short.status).toBe(400);
    expect((await short.json()).code).toBe('invalid_body');
    expect((await s.fetch('/v1/keys', { key: op.secret, json: { name: 'too long', review_expires_in_seconds: 31 * 86_400 } })).status).toBe(
      400,
    );
    expect((await s.fetch(`/v1/keys/${agent.id}/reviews`, { key: agent.secret, json: { review_expires_in_seconds: 60 } })).status).toBe(
      403,
    );
    expect((await s.fetch(`/v1/keys/${agent.id}/reviews`, { key: stranger.secret, json: { review_expires_in_seconds: 60 } })).status).toBe(
      404,
    );
    expect(await (await s.fetch(`/v1/keys/${agent.id}`, { key: op.secret })).json()).toMatchObject({ review_expires_in_seconds: 900 });
  });
});

describe("reviews on a key's operator statement", () => {
  let s: TestServer;
  let op: { id: string; secret: string; accountId: string };
  let agent: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    s = await startTestServer({ CLEARING_INTERVAL_HOURS: '0' });
    op = await s.newKey('ops');
    agent = await s.newKey('agent', undefined, 'agent', op.accountId);
  });
  afterAll(async () => {
    await s?.stop();
  });

  const hold = async (amount: string, mandate?: Record<string, unknown>): Promise<string> => {
    const r = await s.fetch('/v1/prefinality/evaluate', {
      key: agent.secret,
      json: { ...HELD, transfer: { ...TRANSFER, amount }, ...(mandate ? { mandate } : {}) },
    });
    expect(r.status).toBe(409);
    return ((await r.json()) as { review_id: string }).review_id;
  };
  const statement = async (secret: string) => (await (await s.fetch('/v1/me', { key: secret })).json()).operator_checkout;

  it("counts the month's reviews opened, approved, denied and expired, at no cost of their own", async () => {
    expect((await statement(agent.secret)).reviews).toMatchObject({ opened: 0, approved: 0, denied: 0, expired: 0, review_usd: '0.00' });
    const approved = await hold('301.00');
    const denied = await hold('302.00');
    await hold('303.00');
    expect((await s.fetch(`/v1/reviews/${approved}/approve`, { key: op.secret, json: {} })).status).toBe(200);
    expect((await s.fetch(`/v1/reviews/${denied}/deny`, { key: op.secret, json: {} })).status).toBe(200);

    const mine = await statement(agent.secret);
    expect(mine.reviews).toEqual({
      opened: 3,
      approved: 1,
      denied: 1,
      expired: 0,
      review_usd: '0.00',
      charged: expect.stringContaining('nothing of its own'),
    });
    // The reviews are the requesting key's: the operator key that answered them has none on its statement.
    expect((await statement(op.secret)).reviews).toMatchObject({ opened: 0, approved: 0, denied: 0 });
    // They add nothing to what the month owes: three HOLDs at the NAP hold, nothing more.
    expect(mine.charged_usd).toBe('1.50');

    // An expiry is counted in the month it is recorded.
    const brief = await hold('304.00', { review_expires_in_seconds: 60 });
    const due = new Date(Date.parse((await getReview(s.ctx.ledger.read, brief))!.expires_at) + 1000);
    expect(await sweepReviews(s.ctx, due)).toBe(1);
    expect((await monthReviews(s.ctx.ledger.read, agent.id, monthOf(due))).expired).toBe(1);
  });
});

/**
 * Reviews (issue 47) through the real server: a HOLD of pre-finality evaluate
 * and of the execute gate opens one review per held request, people of the
 * account answer it (four eyes, one winner, a note bounded), the agent waits
 * and goes on with `review_id` once, and every step is a receipt in the log
 * linked to the HOLD's. The GO's JWT is checked with jose against the JWKS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { FuseGateClient, FuseGateError } from '../src/client.ts';
import { getReceipt } from '../src/ledger/receipts.ts';
import type { KeyLookup } from '../src/crypto/jws-verify.ts';
import { verifyReceiptEvidence, type ReceiptEvidenceDoc } from '../src/crypto/receipt.ts';
import { sweepReviews } from '../src/api/gate/reviews.ts';
import { PROCESS_TEST_TIMEOUT_MS, runCli } from './support/cli.ts';
import { formClient } from './support/form-client.ts';
import { smtpServer } from './support/smtp.ts';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { startReceiver, type Receiver } from './support/receiver.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const TRANSFER = {
  amount: '125.00',
  currency: 'USD',
  account_number: '000123456789',
  routing_number: '021000021',
  counterparty: 'ACME Supplies LLC',
};
const HELD = { rail: 'rtp', transfer: TRANSFER, context: { review_requested: true } };

interface Review {
  id: string;
  state: string;
  operation: string;
  hold_receipt_id: string;
  opened_receipt_id: string | null;
  decision_receipt_id: string | null;
  decided_by: { kind: string; id: string } | null;
  note: string | null;
  used_receipt_id: string | null;
  summary: Record<string, unknown>;
  review_url: string;
}

describe('reviews: a HOLD is a question for a person', () => {
  let s: TestServer;
  let hook: Receiver;
  let op: { id: string; secret: string; accountId: string };
  let op2: { id: string; secret: string; accountId: string };
  let agent: { id: string; secret: string; accountId: string };
  let stranger: { id: string; secret: string; accountId: string };

  beforeAll(async () => {
    hook = await startReceiver();
    s = await startTestServer({ WEBHOOK_POLL_MS: '50', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', CLEARING_INTERVAL_HOURS: '0' });
    op = await s.newKey('ops');
    op2 = await s.newKey('ops-2', undefined, 'operator', op.accountId);
    agent = await s.newKey('agent', undefined, 'agent', op.accountId);
    stranger = await s.newKey('stranger');
  });
  afterAll(async () => {
    await s?.stop();
    await hook?.close();
  });

  const evaluate = (json: unknown, key = agent.secret) => s.fetch('/v1/prefinality/evaluate', { key, json });
  const review = async (id: string, key = agent.secret, query = ''): Promise<Review> =>
    (await s.fetch(`/v1/reviews/${id}${query}`, { key })).json();
  const answer = (id: string, verb: 'approve' | 'deny', key: string, json: unknown = {}) =>
    s.fetch(`/v1/reviews/${id}/${verb}`, { key, json });
  const hold = async (json: unknown = HELD, key = agent.secret) => {
    const r = await evaluate(json, key);
    expect(r.status).toBe(409);
    return r.json() as Promise<{ decision: string; review_id: string; review_url: string; receipt_id: string }>;
  };

  it('opens one review per held request, with its receipt in the log linked to the HOLD', async () => {
    const sub = await s.fetch('/v1/alerts', {
      key: op.secret,
      json: { url: hook.url('/reviews'), events: ['review.opened', 'review.decided'] },
    });
    expect(sub.status).toBe(201);

    const first = await hold();
    expect(first).toMatchObject({ decision: 'HOLD', review_url: `${s.config.BASE_URL}/v1/reviews/${first.review_id}` });
    expect(first.review_id).toMatch(/^rev_/);
    // A retry of the same request answers with the same review; another amount opens another.
    const again = await hold();
    expect(again.review_id).toBe(first.review_id);
    expect(again.receipt_id).not.toBe(first.receipt_id);
    const other = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '126.00' } });
    expect(other.review_id).not.toBe(first.review_id);
    // A mandate may set how long its review waits; by default 24 hours.
    const brief = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '127.00' }, mandate: { review_expires_in_seconds: 3600 } });
    const lifetime = async (id: string) => {
      const r = (await review(id)) as Review & { created_at: string; expires_at: string };
      return Date.parse(r.expires_at) - Date.parse(r.created_at);
    };
    expect(await lifetime(brief.review_id)).toBe(3_600_000);
    expect(await lifetime(first.review_id)).toBe(86_400_000);
    expect((await evaluate({ ...HELD, mandate: { review_expires_in_seconds: 10 } })).status).toBe(400);

    const r = await review(first.review_id);
    expect(r).toMatchObject({
      object: 'review',
      state: 'pending',
      operation: 'prefinality_evaluate',
      hold_receipt_id: first.receipt_id,
      requested_by: { key_id: agent.id },
    });
    expect(r.summary).toMatchObject({ rail: 'rtp', transfer: TRANSFER, rule: 'context_risk_flag' });
    const hold_ = (await getReceipt(s.ctx.ledger.read, first.receipt_id))!.payload;
    expect(hold_).toMatchObject({ kind: 'prefinality', decision: 'HOLD', data: { review_id: first.review_id } });
    const opened = (await getReceipt(s.ctx.ledger.read, r.opened_receipt_id!))!.payload;
    expect(opened).toMatchObject({
      kind: 'review_opened',
      decision: 'HOLD',
      subject: first.review_id,
      key_id: agent.id,
      data: { review_id: first.review_id, hold_receipt_id: first.receipt_id },
    });

    const list = await (await s.fetch('/v1/reviews?state=pending', { key: op.secret })).json();
    expect(list.pending_count).toBe(3);
    expect(list.data.map((x: Review) => x.id).sort()).toEqual([first.review_id, other.review_id, brief.review_id].sort());
    // A review costs nothing of its own (the HOLD paid the NAP hold); /v1/me says so, with the queue.
    expect(opened.charges).toBeUndefined();
    expect(hold_.charges).toEqual([{ sku: 'hold', amount_micros: 500_000, nap: true }]);
    expect((await (await s.fetch('/v1/me', { key: op.secret })).json()).reviews).toMatchObject({
      pending_count: 3,
      review_usd: '0.00',
      expires_after_seconds: 86_400,
    });
    // Another account sees none of it.
    expect((await (await s.fetch('/v1/reviews', { key: stranger.secret })).json()).data).toEqual([]);
    expect((await s.fetch(`/v1/reviews/${first.review_id}`, { key: stranger.secret })).status).toBe(404);

    // The account's subscription is told of each opened review, queued with its receipt.
    await hook.arrived(3, '/reviews');
    const told = hook.on('/reviews').map((c) => JSON.parse(c.body) as { type: string; data: { review_id: string } });
    expect(told.map((e) => `${e.type} ${e.data.review_id}`).sort()).toEqual(
      [`review.opened ${first.review_id}`, `review.opened ${other.review_id}`, `review.opened ${brief.review_id}`].sort(),
    );
  });

  it('is answered by another operator of the account only, once, with a bounded note committed in its receipt', async () => {
    const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '300.00' } }, op.secret);
    // The requesting key may not answer (even an operator key), an agent key may not, another account sees no such review.
    expect(await (await answer(h.review_id, 'approve', op.secret)).json()).toMatchObject({ status: 403, code: 'four_eyes' });
    expect((await answer(h.review_id, 'approve', agent.secret)).status).toBe(403);
    expect((await answer(h.review_id, 'approve', stranger.secret)).status).toBe(404);
    const long = await answer(h.review_id, 'approve', op2.secret, { note: 'x'.repeat(2001) });
    expect(long.status).toBe(400);
    expect((await long.json()).code).toBe('invalid_body');
    expect((await review(h.review_id)).state).toBe('pending');

    const ok = await answer(h.review_id, 'approve', op2.secret, { note: 'checked the invoice with the supplier' });
    expect(ok.status).toBe(200);
    const approved = await ok.json();
    expect(approved).toMatchObject({
      state: 'approved',
      decided_by: { kind: 'key', id: op2.id },
      note: 'checked the invoice with the supplier',
    });
    expect(await (await answer(h.review_id, 'deny', op2.secret)).json()).toMatchObject({
      status: 409,
      code: 'review_decided',
      state: 'approved',
    });

    // The public receipt commits the reviewer and the note; the account opens them.
    const p = (await getReceipt(s.ctx.ledger.read, approved.receipt_id))!.payload;
    expect(p).toMatchObject({
      kind: 'review_approved',
      decision: 'PERMIT',
      subject: h.review_id,
      key_id: op2.id,
      data: { review_id: h.review_id, hold_receipt_id: h.receipt_id },
    });
    expect(JSON.stringify(p)).not.toContain('checked the invoice');
    const openings = await (await s.fetch(`/v1/receipts/${approved.receipt_id}/openings`, { key: op.secret })).json();
    const byField = Object.fromEntries(
      (openings.openings as Array<{ field: string; value: unknown; commitment: string }>).map((o) => [o.field, o]),
    );
    expect(byField['data.reviewer']).toMatchObject({
      value: { kind: 'key', id: op2.id },
      commitment: (p.data as Record<string, string>).reviewer,
    });
    expect(byField['data.note']!.value).toBe('checked the invoice with the supplier');
    expect((await s.fetch(`/v1/receipts/${approved.receipt_id}/openings`, { key: stranger.secret })).status).toBe(404);
  });

  it('lets the agent wait, then go on once with review_id: a GO that names the review and its approver', async () => {
    const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '410.00' } });
    const held = { ...HELD, transfer: { ...TRANSFER, amount: '410.00' }, review_id: h.review_id };
    // Before anyone answers, the approval is not there to use.
    expect(await (await evaluate(held)).json()).toMatchObject({ status: 409, code: 'review_pending' });

    const waiting = review(h.review_id, agent.secret, '?wait=30');
    expect((await answer(h.review_id, 'approve', op.secret)).status).toBe(200);
    expect(await waiting).toMatchObject({ id: h.review_id, state: 'approved', decided_by: { kind: 'key', id: op.id } });

    // Another amount, or another key, is not the request approved.
    expect(await (await evaluate({ ...held, transfer: { ...TRANSFER, amount: '411.00' } })).json()).toMatchObject({
      status: 409,
      code: 'review_mismatch',
    });
    expect(await (await evaluate(held, op.secret)).json()).toMatchObject({ status: 409, code: 'review_mismatch' });

    const go = await evaluate(held);
    expect(go.status).toBe(200);
    const body = await go.json();
    expect(body).toMatchObject({
      decision: 'GO',
      review: { review_id: h.review_id, hold_receipt_id: h.receipt_id, approved_by: { kind: 'key', id: op.id } },
    });
    const jwks = createLocalJWKSet(await (await s.fetch('/.well-known/prefinality-jwks.json')).json());
    const { payload } = await jwtVerify(body.receipt_jwt, jwks, { issuer: s.config.BASE_URL });
    const r = await review(h.review_id);
    expect(payload.review).toEqual({
      id: h.review_id,
      hold_receipt_id: h.receipt_id,
      approval_receipt_id: r.decision_receipt_id,
      approved_by: { kind: 'key', id: op.id },
    });
    // The public receipt carries the chain HOLD -> approval -> GO, the approver as the approval's commitment.
    const approval = (await getReceipt(s.ctx.ledger.read, r.decision_receipt_id!))!.payload;
    const goReceipt = (await getReceipt(s.ctx.ledger.read, body.receipt_id))!.payload;
    expect(goReceipt.data!.review).toEqual({
      review_id: h.review_id,
      hold_receipt_id: h.receipt_id,
      approval_receipt_id: r.decision_receipt_id,
      approver: (approval.data as Record<string, string>).reviewer,
    });
    expect(r).toMatchObject({ used_receipt_id: body.receipt_id });

    // The GO's document carries the evidence of its HOLD and of the approval: the chain checks offline from it.
    const doc = (await (await fetch(body.verify_url)).json()) as ReceiptEvidenceDoc & {
      review_chain: { hold: ReceiptEvidenceDoc; approval: ReceiptEvidenceDoc };
    };
    const logKey = ((await (await s.fetch('/api/v1/logs/receipts')).json()) as { verifier_keys: string[] }).verifier_keys[0]!;
    const jwksKeys = ((await (await s.fetch('/.well-known/prefinality-jwks.json')).json()) as { keys: Array<{ kid: string; x: string }> })
      .keys;
    const keys: KeyLookup = {
      byKid: (kid) => {
        const k = jwksKeys.find((j) => j.kid === kid);
        return k ? { kid, raw: new Uint8Array(Buffer.from(k.x, 'base64url')) } : undefined;
      },
    };
    for (const e of [doc, doc.review_chain.hold, doc.review_chain.approval]) {
      const checks = await verifyReceiptEvidence(e, { keys, logKey });
      expect([checks.leaf!.ok, checks.inclusion!.ok, checks.checkpoint!.ok]).toEqual([true, true, true]);
    }
    expect(doc.review_chain.hold.payload).toMatchObject({ receipt_id: h.receipt_id, decision: 'HOLD', data: { review_id: h.review_id } });
    expect(doc.review_chain.approval.payload).toMatchObject({
      receipt_id: r.decision_receipt_id,
      kind: 'review_approved',
      data: { reviewer: (doc.payload.data as { review: { approver: string } }).review.approver },
    });

    // Single use.
    expect(await (await evaluate(held)).json()).toMatchObject({ status: 409, code: 'review_used' });
    expect((await s.fetch('/v1/reviews/rev_nothing', { key: agent.secret })).status).toBe(404);
    expect(await (await evaluate({ ...held, review_id: 'rev_nothing' })).json()).toMatchObject({ status: 404, code: 'unknown_review' });
  });

  it('refuses a denied review, and of an approval and a denial racing exactly one wins', async () => {
    const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '520.00' } });
    const results = await Promise.all([answer(h.review_id, 'approve', op.secret), answer(h.review_id, 'deny', op2.secret, { note: 'no' })]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const r = await review(h.review_id);
    expect(['approved', 'denied']).toContain(r.state);
    const receipts = (await s.ctx.ledger.read.execute({ sql: 'SELECT decision_receipt_id FROM reviews WHERE id = ?', args: [h.review_id] }))
      .rows;
    expect(receipts).toHaveLength(1);

    const d = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '521.00' } });
    expect((await answer(d.review_id, 'deny', op.secret, { note: 'not on the supplier list' })).status).toBe(200);
    expect(await (await evaluate({ ...HELD, transfer: { ...TRANSFER, amount: '521.00' }, review_id: d.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_denied',
    });
    // Once denied, the same request held again opens a new review.
    expect((await hold({ ...HELD, transfer: { ...TRANSFER, amount: '521.00' } })).review_id).not.toBe(d.review_id);
  });

  it('expires unanswered: the answer refused, the expiry a receipt, the approval unusable', async () => {
    const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '630.00' } });
    const past = new Date(Date.now() - 1000).toISOString();
    await s.ctx.ledger.write((tx) => tx.execute({ sql: 'UPDATE reviews SET expires_at = ? WHERE id = ?', args: [past, h.review_id] }));
    expect((await review(h.review_id)).state).toBe('expired');
    expect(await (await answer(h.review_id, 'approve', op.secret)).json()).toMatchObject({ status: 409, code: 'review_expired' });
    expect(await (await evaluate({ ...HELD, transfer: { ...TRANSFER, amount: '630.00' }, review_id: h.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_expired',
    });

    expect(await sweepReviews(s.ctx)).toBeGreaterThanOrEqual(1);
    const r = await review(h.review_id);
    expect(r.state).toBe('expired');
    expect((await getReceipt(s.ctx.ledger.read, r.decision_receipt_id!))!.payload).toMatchObject({
      kind: 'review_expired',
      decision: 'SILENCE',
      data: { review_id: h.review_id, hold_receipt_id: h.receipt_id },
    });
    // Recorded once: a second sweep finds nothing to do for it.
    await sweepReviews(s.ctx);
    expect((await review(h.review_id)).decision_receipt_id).toBe(r.decision_receipt_id);
  });

  it('records one outcome of an approval racing the expiry, in the log', async () => {
    const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '640.00' } });
    const past = new Date(Date.now() - 1000).toISOString();
    await s.ctx.ledger.write((tx) => tx.execute({ sql: 'UPDATE reviews SET expires_at = ? WHERE id = ?', args: [past, h.review_id] }));
    const [answered, swept] = await Promise.all([answer(h.review_id, 'approve', op.secret), sweepReviews(s.ctx)]);
    expect(answered.status).toBe(409);
    expect(swept).toBeGreaterThanOrEqual(1);
    const r = await review(h.review_id);
    expect(r.state).toBe('expired');
    const decided = (
      await s.ctx.ledger.read.execute({ sql: 'SELECT decision_receipt_id FROM reviews WHERE id = ?', args: [h.review_id] })
    ).rows.map((x) => String(x.decision_receipt_id));
    expect(decided).toEqual([r.decision_receipt_id]);
    expect((await getReceipt(s.ctx.ledger.read, r.decision_receipt_id!))!.payload.kind).toBe('review_expired');
  });

  it('is answered in one process while the agent waits on another, both on one database', async () => {
    const other = await startTestServer({}, s.dir);
    try {
      const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '960.00' } });
      const waiting = other.fetch(`/v1/reviews/${h.review_id}?wait=30`, { key: agent.secret }).then((r) => r.json() as Promise<Review>);
      expect((await answer(h.review_id, 'approve', op.secret)).status).toBe(200);
      expect(await waiting).toMatchObject({ id: h.review_id, state: 'approved' });
      // The other process clears the request once; this one then refuses it as used.
      expect(
        (
          await other.fetch('/v1/prefinality/evaluate', {
            key: agent.secret,
            json: { ...HELD, transfer: { ...TRANSFER, amount: '960.00' }, review_id: h.review_id },
          })
        ).status,
      ).toBe(200);
      expect(await (await evaluate({ ...HELD, transfer: { ...TRANSFER, amount: '960.00' }, review_id: h.review_id })).json()).toMatchObject(
        { code: 'review_used' },
      );
    } finally {
      await other.close();
    }
  });

  it('holds the execute gate above hold_above_usd and PERMITs the approved request once', async () => {
    const fuse = await (await s.fetch('/v1/fuses', { key: op.secret, json: { label: 'payments' } })).json();
    const req = { fuse_id: fuse.fuse_id, action: { kind: 'pay' }, exposure_usd: '2500.00', hold_above_usd: '1000.00' };
    const gate = (json: unknown) => s.fetch('/api/v1/execute-gate', { key: agent.secret, json });
    const held = await gate(req);
    const h = await held.json();
    expect(h).toMatchObject({ decision: 'HOLD', rule: 'above_hold' });
    expect(h.review_id).toMatch(/^rev_/);
    expect((await review(h.review_id)).summary).toMatchObject({ fuse_id: fuse.fuse_id, exposure_usd: '2500.00', rule: 'above_hold' });
    expect((await answer(h.review_id, 'approve', op.secret)).status).toBe(200);
    expect(await (await gate({ ...req, exposure_usd: '2600.00', review_id: h.review_id })).json()).toMatchObject({
      status: 409,
      code: 'review_mismatch',
    });
    const permit = await (await gate({ ...req, review_id: h.review_id })).json();
    expect(permit).toMatchObject({
      decision: 'PERMIT',
      cleared_exposure_usd: '2500.00',
      review: { review_id: h.review_id, approved_by: { kind: 'key', id: op.id } },
    });
    expect((await getReceipt(s.ctx.ledger.read, permit.receipt_id))!.payload.data).toMatchObject({
      review: { review_id: h.review_id, hold_receipt_id: h.receipt_id },
    });
    expect(await (await gate({ ...req, review_id: h.review_id })).json()).toMatchObject({ status: 409, code: 'review_used' });
  });

  it('runs the whole loop over MCP (the official SDK client) and the typed client', async () => {
    const mcp = async (secret: string) => {
      const client = new Client({ name: 'reviews-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }),
      );
      return client;
    };
    const agentMcp = await mcp(agent.secret);
    const opMcp = await mcp(op.secret);
    type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
    const call = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: args })) as Result;
    try {
      const request = { ...HELD, transfer: { ...TRANSFER, amount: '740.00' } };
      const held = await call(agentMcp, 'prefinality_evaluate', request);
      expect(held.structuredContent).toMatchObject({ decision: 'HOLD' });
      const reviewId = held.structuredContent!.review_id as string;
      // The agent key is not offered the answer; the operator's queue lists it.
      expect((await agentMcp.listTools()).tools.map((t) => t.name)).not.toContain('review_approve');
      const queue = await call(opMcp, 'reviews_list', { state: 'pending' });
      expect((queue.structuredContent!.data as Review[]).map((r) => r.id)).toContain(reviewId);
      // The typed client waits while the operator approves over MCP.
      const gate = new FuseGateClient({ baseUrl: s.url, apiKey: agent.secret });
      const waiting = gate.waitForReview(reviewId, { timeoutSeconds: 60 });
      const approved = await call(opMcp, 'review_approve', { review_id: reviewId, note: 'ok over MCP' });
      expect(approved.isError).toBeUndefined();
      expect(await waiting).toMatchObject({ id: reviewId, state: 'approved', decided_by: { kind: 'key', id: op.id }, status: 200 });
      const go = await call(agentMcp, 'prefinality_evaluate', { ...request, review_id: reviewId });
      expect(go.structuredContent).toMatchObject({ decision: 'GO', review: { review_id: reviewId } });
      const again = await gate.evaluate({ ...request, review_id: reviewId }).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(FuseGateError);
      expect((again as FuseGateError).problem).toMatchObject({ code: 'review_used' });
    } finally {
      await agentMcp.close();
      await opMcp.close();
    }
  });

  it(
    'is answered from the command line, through the service, as the operator key it is given',
    async () => {
      const h = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '850.00' } });
      const env = { FUSEGATE_URL: s.url, FUSEGATE_KEY: op.secret };
      const list = await runCli(['reviews', 'list', '--state', 'pending'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain(`${h.review_id}  pending`);
      expect(list.stdout).toContain('850.00 USD to ACME Supplies LLC');
      const approved = await runCli(['reviews', 'approve', h.review_id, '--note', 'ok from the terminal', '--json'], env);
      expect(approved.code).toBe(0);
      expect(JSON.parse(approved.stdout)).toMatchObject({
        id: h.review_id,
        state: 'approved',
        note: 'ok from the terminal',
        decided_by: { kind: 'key', id: op.id },
      });
      const again = await runCli(['reviews', 'deny', h.review_id], env);
      expect(again.code).toBe(1);
      expect(again.stdout).toContain('review_decided');
      // The key that made the request may not answer it, from here either.
      const own = await hold({ ...HELD, transfer: { ...TRANSFER, amount: '851.00' } }, op2.secret);
      expect((await runCli(['reviews', 'deny', own.review_id], { FUSEGATE_URL: s.url, FUSEGATE_KEY: op2.secret })).stdout).toContain(
        'four_eyes',
      );
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('opens no review for the demo', async () => {
    expect(await (await s.fetch('/demo/prefinality/evaluate', { json: { ...HELD, review_id: 'rev_x' } })).json()).toMatchObject({
      status: 400,
      code: 'review_needs_key',
    });
    const demo = await (await s.fetch('/demo/prefinality/evaluate', { json: HELD })).json();
    expect(demo.decision).toBe('HOLD');
    expect(demo.review_id).toBeUndefined();
  });
});

describe('reviews: the account is told by mail when MAIL_URL is set', () => {
  let s: TestServer;
  let smtp: Awaited<ReturnType<typeof smtpServer>>;
  beforeAll(async () => {
    smtp = await smtpServer();
    s = await startTestServer({ MAIL_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Fuse Gate <no-reply@gate.example>' });
  });
  afterAll(async () => {
    await s?.stop();
    await new Promise((r) => smtp?.server.close(r));
  });

  it('mails the signed-up person a link to the queue for each review opened, and none for a retry', async () => {
    const signup = await formClient(s).post('/signup', { email: 'ops@example.invalid', password: 'correct horse battery staple' });
    expect(signup.status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'ops@example.invalid'))!.account_id;
    const agent = await s.newKey('agent', undefined, 'agent', accountId);
    const held = await (await s.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: HELD })).json();
    expect(held.decision).toBe('HOLD');
    await smtp.arrived(1);
    expect((await (await s.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: HELD })).json()).review_id).toBe(held.review_id);
    const m = smtp.mail[0]!;
    expect(m.to).toContain('ops@example.invalid');
    expect(m.data).toContain('Subject: Review needed: 125.00 USD to ACME Supplies LLC');
    expect(m.data).toContain(`${s.config.BASE_URL}/dashboard/reviews#${held.review_id}`);
    // The retry's HOLD opened nothing: one more review opened is the only thing that mails again.
    await (
      await s.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: { ...HELD, transfer: { ...TRANSFER, amount: '1.00' } } })
    ).json();
    await smtp.arrived(2);
    expect(smtp.mail.map((x) => /Subject: (.*)/.exec(x.data)![1])).toEqual([
      'Review needed: 125.00 USD to ACME Supplies LLC',
      'Review needed: 1.00 USD to ACME Supplies LLC',
    ]);
  });

  it("asks the account's people who may answer: its owners and operators are mailed, its viewers are not", async () => {
    const lead = formClient(s);
    expect((await lead.post('/signup', { email: 'lead@example.invalid', password: 'correct horse battery staple' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'lead@example.invalid'))!.account_id;
    // Invitations go out by mail (MAIL_URL is set); each person signs up and follows their link.
    for (const [email, role] of [
      ['second@example.invalid', 'operator'],
      ['watcher@example.invalid', 'viewer'],
    ] as const) {
      const before = smtp.mail.length;
      expect((await lead.post('/dashboard/members/invite', { email, role })).headers.get('location')).toBe(
        '/dashboard/members?done=invited',
      );
      await smtp.arrived(before + 1);
      const invitation = smtp.mail[before]!;
      expect(invitation.to).toContain(email);
      const link = new URL(/\/invite\/[A-Za-z0-9_-]{43}/.exec(invitation.data)![0], s.url).pathname;
      const person = formClient(s);
      expect((await person.post('/signup', { email, password: 'correct horse battery staple' })).status).toBe(303);
      expect((await person.post(link, {})).headers.get('location')).toBe('/dashboard/members?done=joined');
    }
    const before = smtp.mail.length;
    const agent = await s.newKey('agent', undefined, 'agent', accountId);
    const held = await (
      await s.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: { ...HELD, transfer: { ...TRANSFER, amount: '7.00' } } })
    ).json();
    expect(held.decision).toBe('HOLD');
    await smtp.arrived(before + 2);
    const told = smtp.mail.slice(before).filter((m) => m.data.includes(held.review_id));
    expect(told.map((m) => m.to.replace(/[<>]/g, '')).sort()).toEqual(['lead@example.invalid', 'second@example.invalid']);
  });
});

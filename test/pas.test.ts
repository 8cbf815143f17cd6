/**
 * Policy administration through the real HTTP server and a real libSQL file:
 * every row of SPEC part 3 about licence parents and bind tickets, every HALT
 * reason, bind check and appendix, PAS-B, delegated authority, the demos.
 * Receipts are checked with jose against the published key; fingerprints are
 * recomputed here with node:crypto from a hand-written canonical form.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedReceiptPayload } from './support/receipts.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';
import { PROCESS_TEST_TIMEOUT_MS } from './support/cli.ts';

let s: TestServer;
let key: { id: string; secret: string };
let other: { id: string; secret: string };
let liveFuse: string;
let deadFuse: string;

const post = (path: string, json: unknown, k: string | undefined = key.secret, headers: Record<string, string> = {}) =>
  s.fetch(path, { method: 'POST', ...(json === undefined ? {} : { json }), ...(k ? { key: k } : {}), headers });
const get = (path: string, k: string | undefined = key.secret) => s.fetch(path, k ? { key: k } : {});

const WRITE = { premium: '12500.00', op: 'bind', policy: 'P-1042' };
/** The canonical form written by hand: keys sorted, no whitespace. */
const WRITE_FP = createHash('sha256').update('{"op":"bind","policy":"P-1042","premium":"12500.00"}').digest('hex');
const nowUtc = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

/** The receipts-log index a receipt id carries: the order the log gave the acts. */
const index = (receiptId: string) => Number(/^rcpt_(\d+)_/.exec(receiptId)![1]);

let seq = 0;
const uniq = (p: string) => `${p}_${++seq}_${Math.random().toString(36).slice(2, 8)}`;

async function charged(licenseId: string, k = key.secret) {
  const r = await post(`/v1/pas/licenses/${licenseId}/charge`, undefined, k);
  expect(r.status).toBe(200);
  return r.json();
}

async function ticketFor(licenseId: string, jobId: string, write: unknown = WRITE) {
  const r = await post('/v1/pas/pas-a/pre-bind', { fuse_id: liveFuse, license_id: licenseId, job_id: jobId, write });
  expect(r.status).toBe(200);
  const body = await r.json();
  return body.ticket as { ticket_id: string; spend_fingerprint: string; expires_at: string };
}

async function meterRows(keyId = key.id): Promise<Array<{ sku: string }>> {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku }));
}

async function verifyReceipt(receiptId: string) {
  return verifiedReceiptPayload(s, receiptId);
}

beforeAll(async () => {
  s = await startTestServer({ DEMO_RATE_LIMIT: '1000', TICKET_TTL_SECONDS: '600', TICKET_CLOCK_SKEW_SECONDS: '30' });
  key = await s.newKey('pas');
  other = await s.newKey('other');
  liveFuse = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
  deadFuse = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
  expect((await post(`/v1/fuses/${deadFuse}/dead`, undefined)).status).toBe(200);
});
afterAll(() => s.stop());

describe('licence parents (SPEC 3)', () => {
  it('reads UNSIGNED before any charge, and a read creates nothing', async () => {
    const id = uniq('lic');
    for (let i = 0; i < 2; i++) {
      const snap = await (await get(`/v1/pas/licenses/${id}`)).json();
      expect(snap).toMatchObject({ object: 'license', license_id: id, state: 'UNSIGNED', charged: false, history: [] });
      expect(snap.children).toEqual({ issued: 0, outstanding: 0, redeemed: 0, expired_unredeemed: 0, superseded: 0 });
    }
    const rs = await s.ctx.ledger.read.execute({ sql: 'SELECT COUNT(*) AS n FROM pas_licenses WHERE license_id = ?', args: [id] });
    expect(Number(rs.rows[0]!.n)).toBe(0);
  });

  it('charge moves UNSIGNED to LIVE, refuses a second charge, dead blows it to DEAD, charge resurrects DEAD', async () => {
    const id = uniq('lic');
    const first = await charged(id);
    expect(first).toMatchObject({ license_id: id, previous_state: 'UNSIGNED', state: 'LIVE' });
    const second = await post(`/v1/pas/licenses/${id}/charge`, undefined);
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await second.json()).toMatchObject({ code: 'invalid_transition', state: 'LIVE' });
    const dead = await (await post(`/v1/pas/licenses/${id}/dead`, undefined)).json();
    expect(dead).toMatchObject({ previous_state: 'LIVE', state: 'DEAD' });
    const again = await charged(id);
    expect(again).toMatchObject({ previous_state: 'DEAD', state: 'LIVE' });
    const snap = await (await get(`/v1/pas/licenses/${id}`)).json();
    expect(snap.state).toBe('LIVE');
    expect(snap.history.map((h: { from: string; to: string }) => `${h.from}>${h.to}`)).toEqual(['UNSIGNED>LIVE', 'LIVE>DEAD', 'DEAD>LIVE']);
    // Each transition is a receipt signed by the service key (checked with jose).
    const payload = await verifyReceipt(snap.history[1].receipt_id);
    expect(payload).toMatchObject({ kind: 'pas_license_dead', decision: 'DEAD', subject: id, key_id: key.id });
    // The charge is the only write: no ticket (no bind-only write) was made by it.
    expect(snap.children.issued).toBe(0);
  });

  it('blows an UNSIGNED parent too (dead: any state)', async () => {
    const id = uniq('lic');
    expect(await (await post(`/v1/pas/licenses/${id}/dead`, undefined)).json()).toMatchObject({
      previous_state: 'UNSIGNED',
      state: 'DEAD',
    });
    expect((await (await get(`/v1/pas/licenses/${id}`)).json()).state).toBe('DEAD');
  });

  it('reads ARMED while LIVE with an unredeemed child, LIVE again once it is redeemed', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    const armed = await (await get(`/v1/pas/licenses/${id}`)).json();
    expect(armed).toMatchObject({ state: 'ARMED', children: { issued: 1, outstanding: 1, redeemed: 0 } });
    const r = await post('/v1/pas/bind-ticket/redeem', { ticket_id: t.ticket_id, write: WRITE, now: nowUtc() });
    expect(r.status).toBe(200);
    expect(await (await get(`/v1/pas/licenses/${id}`)).json()).toMatchObject({
      state: 'LIVE',
      children: { issued: 1, outstanding: 0, redeemed: 1 },
    });
  });

  it('reports the parent and decides each pre-bind as the log orders it, beside the redeems and pre-binds of its group', async () => {
    // Each round: a parent whose one outstanding child is t0 (job a). Sent together, so that most land in one
    // group: a pre-bind of job a (a new child, superseded if the redeem of t0 comes first), the redeem of t0, and
    // a pre-bind of job b. Whatever their order, each answer must be what the acts before it in the log left.
    const rounds = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const license = uniq('lic');
        const [a, b] = [uniq('job'), uniq('job')];
        await charged(license);
        const t0 = await ticketFor(license, a);
        const [preA, redeem, preB] = await Promise.all([
          post('/v1/pas/pas-a/pre-bind', { fuse_id: liveFuse, license_id: license, job_id: a, write: WRITE }),
          post('/v1/pas/bind-ticket/redeem', { ticket_id: t0.ticket_id, write: WRITE, now: nowUtc() }),
          post('/v1/pas/pas-a/pre-bind', { fuse_id: liveFuse, license_id: license, job_id: b, write: WRITE }),
        ]);
        return { a, b, t0: t0.ticket_id, preA: await preA.json(), redeem: await redeem.json(), preB: await preB.json(), license };
      }),
    );
    for (const r of rounds) {
      // The parent as a model replays the log: its children (job, redeemed) and its bound jobs.
      const children = new Map<string, { job: string; redeemed: boolean }>([[r.t0, { job: r.a, redeemed: false }]]);
      const bound = new Set<string>();
      const parent = () => ([...children.values()].some((c) => !c.redeemed && !bound.has(c.job)) ? 'ARMED' : 'LIVE');
      const acts = [
        { answer: r.preA, job: r.a },
        { answer: r.redeem, ticket: r.t0 },
        { answer: r.preB, job: r.b },
      ].sort((x, y) => index(x.answer.receipt_id) - index(y.answer.receipt_id));
      for (const act of acts) {
        if (act.ticket) {
          const child = children.get(act.ticket)!;
          const replay = bound.has(child.job);
          expect(act.answer.decision, r.license).toBe(replay ? 'HALT' : 'ALLOW');
          if (!replay) [child.redeemed] = [true, bound.add(child.job)];
          continue;
        }
        expect(act.answer.license_state, r.license).toBe(parent());
        if (bound.has(act.job!)) {
          expect(act.answer).toMatchObject({ decision: 'BLOCK', code: 'already_bound' });
          continue;
        }
        expect(act.answer.decision).toBe('ALLOW');
        children.set(act.answer.ticket.ticket_id, { job: act.job!, redeemed: false });
      }
      // And the snapshot, read afterwards, agrees with the model.
      expect((await (await get(`/v1/pas/licenses/${r.license}`)).json()).state).toBe(parent());
    }
  });

  it('reports a parent LIVE to its first pre-bind only, when many come together, and counts every child', async () => {
    // Sent together, most land in a group whose tickets are written at its end: the pre-binds after the first
    // must still see the parent ARMED by the tickets issued before them.
    const id = uniq('lic');
    await charged(id);
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        post('/v1/pas/pas-a/pre-bind', { fuse_id: liveFuse, license_id: id, job_id: uniq('job'), write: WRITE }).then((r) => r.json()),
      ),
    );
    const [first, ...rest] = answers.sort((x, y) => index(x.receipt_id) - index(y.receipt_id));
    expect(first).toMatchObject({ decision: 'ALLOW', license_state: 'LIVE' });
    for (const a of rest)
      expect(a).toMatchObject({ decision: 'ALLOW', license_state: 'ARMED', ticket: { state: 'issued', redeemable: true } });
    expect(new Set(answers.map((a) => a.ticket.ticket_id)).size).toBe(40);
    expect(await (await get(`/v1/pas/licenses/${id}`)).json()).toMatchObject({ state: 'ARMED', children: { issued: 40, outstanding: 40 } });
  });

  it("keeps keys apart: another key's licence of the same id is its own UNSIGNED parent", async () => {
    const id = uniq('lic');
    await charged(id);
    expect((await (await get(`/v1/pas/licenses/${id}`, other.secret)).json()).state).toBe('UNSIGNED');
  });

  it('refuses a bad licence id with 400 naming the field, and needs a key', async () => {
    const r = await get('/v1/pas/licenses/bad%20id');
    expect(r.status).toBe(400);
    expect((await r.json()).errors[0].field).toBe('license_id');
    expect((await get('/v1/pas/licenses/lic_x', '')).status).toBe(401);
  });
});

describe('PAS-A pre-bind and bind tickets', () => {
  it('issues a bind-only ticket bound to the SHA-256 of the canonical write', async () => {
    const id = uniq('lic');
    await charged(id);
    const r = await post('/v1/pas/pas-a/pre-bind', { fuse_id: liveFuse, license_id: id, job_id: uniq('job'), write: WRITE });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body).toMatchObject({ decision: 'ALLOW', next_step: 'bind_only_ticket', bind_and_issue: false });
    expect(body.ticket).toMatchObject({
      scope: 'bind_only',
      bind_and_issue: false,
      spend_fingerprint: WRITE_FP,
      license_id: id,
      state: 'issued',
    });
    expect(Date.parse(body.ticket.expires_at) - Date.parse(body.ticket.issued_at)).toBe(600_000);
    expect(await verifyReceipt(body.receipt_id)).toMatchObject({ kind: 'pas_pre_bind_a', decision: 'ALLOW' });
    expect((await meterRows()).at(-1)!.sku).toBe('execute_gate');
  });

  it('raises a manual-underwriting issue instead: parent not LIVE, DEAD fuse, bind-and-issue asked', async () => {
    const unsigned = uniq('lic');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ fuse_id: liveFuse, license_id: unsigned, job_id: uniq('job'), write: WRITE }, 'license_not_live'],
      [{ fuse_id: deadFuse, license_id: unsigned, job_id: uniq('job'), write: WRITE }, 'hop_deny'],
    ];
    const live = uniq('lic');
    await charged(live);
    cases.push([
      { fuse_id: liveFuse, license_id: live, job_id: uniq('job'), write: WRITE, scope: 'bind_and_issue' },
      'bind_and_issue_not_granted',
    ]);
    for (const [req, code] of cases) {
      const r = await post('/v1/pas/pas-a/pre-bind', req);
      expect(r.status).toBe(409);
      const body = await r.json();
      expect(body).toMatchObject({ decision: 'HOLD', next_step: 'manual_underwriting', bind_and_issue: false, issue: { code } });
      expect(body.ticket).toBeUndefined();
      expect((await meterRows()).at(-1)!.sku).toBe('hold');
    }
    expect((await (await get(`/v1/pas/licenses/${live}`)).json()).children.issued).toBe(0);
  });

  it('refuses bad input with 400 naming the field and writes nothing', async () => {
    const before = (await meterRows()).length;
    const id = uniq('lic');
    await charged(id);
    const bad: Array<[unknown, string]> = [
      [{ fuse_id: liveFuse, license_id: id, job_id: 'j1' }, 'spend_fingerprint'],
      [{ fuse_id: liveFuse, license_id: id, job_id: 'j1', write: WRITE, spend_fingerprint: WRITE_FP }, 'spend_fingerprint'],
      [{ fuse_id: liveFuse, license_id: id, job_id: 'j1', spend_fingerprint: 'ABC' }, 'spend_fingerprint'],
      [{ fuse_id: liveFuse, license_id: 'bad id', job_id: 'j1', write: WRITE }, 'license_id'],
      [{ fuse_id: liveFuse, license_id: id, job_id: 'j1', write: WRITE, scope: 'issue' }, 'scope'],
      [{ fuse_id: liveFuse, license_id: id, job_id: 'j1', write: WRITE, extra: 1 }, '(body)'],
    ];
    for (const [body, field] of bad) {
      const r = await post('/v1/pas/pas-a/pre-bind', body);
      expect(r.status).toBe(400);
      const p = await r.json();
      expect(p.code).toBe('invalid_body');
      expect(p.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await meterRows()).length).toBe(before);
    expect((await (await get(`/v1/pas/licenses/${id}`)).json()).children.issued).toBe(0);
  });
});

describe('bind ticket redeem (SPEC 3, 7: HALT)', () => {
  const redeem = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    post('/v1/pas/bind-ticket/redeem', body, key.secret, headers);

  it('consumes a fresh ticket once for its write; a second redeem is HALT replay', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    const ok = await redeem({ ticket_id: t.ticket_id, spend_fingerprint: WRITE_FP, now: nowUtc() });
    expect(ok.status).toBe(200);
    const body = await ok.json();
    expect(body).toMatchObject({ decision: 'ALLOW', redeemed: true, ticket_state: 'consumed' });
    expect(await verifyReceipt(body.receipt_id)).toMatchObject({
      kind: 'pas_bind_ticket_redeem',
      decision: 'ALLOW',
      fingerprint: WRITE_FP,
    });
    expect((await meterRows()).at(-1)!.sku).toBe('execute_gate');
    const again = await redeem({ ticket_id: t.ticket_id, write: WRITE, now: nowUtc() });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ decision: 'HALT', halt: true, reason: 'replay', redeemed: false });
    expect((await meterRows()).at(-1)!.sku).toBe('hold');
  });

  it('HALT wrong_write for another write, and the ticket still redeems for its own', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    const wrong = await redeem({ ticket_id: t.ticket_id, write: { ...WRITE, premium: '1.00' }, now: nowUtc() });
    expect(wrong.status).toBe(409);
    expect(await wrong.json()).toMatchObject({ decision: 'HALT', reason: 'wrong_write' });
    // Key order does not matter: the fingerprint is of the canonical form.
    const right = await redeem({ ticket_id: t.ticket_id, write: { policy: 'P-1042', op: 'bind', premium: '12500.00' }, now: nowUtc() });
    expect(right.status).toBe(200);
  });

  it('HALT stale when the presented UTC now is outside the clock skew, or the ticket has expired', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    for (const off of [-5 * 60_000, 5 * 60_000]) {
      const r = await redeem({ ticket_id: t.ticket_id, write: WRITE, now: nowUtc(off) });
      expect(r.status).toBe(409);
      expect(await r.json()).toMatchObject({ decision: 'HALT', reason: 'stale' });
    }
    // A server whose tickets live 1 s: a caller now 20 s ahead (within the 30 s skew) is past expiry.
    const short = await startTestServer({ TICKET_TTL_SECONDS: '1', TICKET_CLOCK_SKEW_SECONDS: '30' });
    try {
      const k = await short.newKey();
      const f = (await (await short.fetch('/v1/fuses', { json: { state: 'LIVE' }, key: k.secret })).json()).fuse_id;
      await short.fetch('/v1/pas/licenses/lic_s/charge', { method: 'POST', key: k.secret });
      const tk = (
        await (
          await short.fetch('/v1/pas/pas-a/pre-bind', {
            json: { fuse_id: f, license_id: 'lic_s', job_id: 'j', write: WRITE },
            key: k.secret,
          })
        ).json()
      ).ticket;
      const r = await short.fetch('/v1/pas/bind-ticket/redeem', {
        json: { ticket_id: tk.ticket_id, write: WRITE, now: nowUtc(20_000) },
        key: k.secret,
      });
      expect(r.status).toBe(409);
      expect(await r.json()).toMatchObject({ reason: 'stale', detail: expect.stringMatching(/expired/) });
      // The snapshot no longer counts the stale child as outstanding once it has expired.
      const snap = await (await short.fetch('/v1/pas/licenses/lic_s', { key: k.secret })).json();
      expect(snap.children.issued).toBe(1);
    } finally {
      await short.stop();
    }
  });

  it('HALT dead_parent after dead; the same ticket redeems after a charge (a child cannot outlive its parent)', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    await post(`/v1/pas/licenses/${id}/dead`, undefined);
    const halted = await redeem({ ticket_id: t.ticket_id, write: WRITE, now: nowUtc() });
    expect(halted.status).toBe(409);
    expect(await halted.json()).toMatchObject({ decision: 'HALT', reason: 'dead_parent' });
    expect((await (await get(`/v1/pas/licenses/${id}`)).json()).state).toBe('DEAD');
    await charged(id);
    expect((await (await get(`/v1/pas/licenses/${id}`)).json()).state).toBe('ARMED');
    expect((await redeem({ ticket_id: t.ticket_id, write: WRITE, now: nowUtc() })).status).toBe(200);
  });

  it('HALT replay when the job was already bound by another ticket', async () => {
    const id = uniq('lic');
    await charged(id);
    const job = uniq('job');
    const a = await ticketFor(id, job);
    const b = await ticketFor(id, job);
    expect((await redeem({ ticket_id: a.ticket_id, write: WRITE, now: nowUtc() })).status).toBe(200);
    const r = await redeem({ ticket_id: b.ticket_id, write: WRITE, now: nowUtc() });
    expect(await r.json()).toMatchObject({ decision: 'HALT', reason: 'replay' });
  });

  it('replays an Idempotency-Key answer and charges once', async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    const body = { ticket_id: t.ticket_id, write: WRITE, now: nowUtc() };
    const before = (await meterRows()).length;
    const a = await redeem(body, { 'idempotency-key': `idem-${t.ticket_id}` });
    const b = await redeem(body, { 'idempotency-key': `idem-${t.ticket_id}` });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect((await b.json()).receipt_id).toBe((await a.json()).receipt_id);
    expect((await meterRows()).length).toBe(before + 1);
  });

  it("404 for an unknown ticket or another key's, and 400 naming the field for bad input, changing nothing", async () => {
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, uniq('job'));
    const before = (await meterRows()).length;
    expect((await redeem({ ticket_id: 'bt_nope', write: WRITE, now: nowUtc() })).status).toBe(404);
    const foreign = await post('/v1/pas/bind-ticket/redeem', { ticket_id: t.ticket_id, write: WRITE, now: nowUtc() }, other.secret);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).code).toBe('unknown_ticket');
    const bad: Array<[unknown, string]> = [
      [{ ticket_id: t.ticket_id, write: WRITE }, 'now'],
      [{ ticket_id: t.ticket_id, write: WRITE, now: '2026-11-22T10:00:00+01:00' }, 'now'],
      [{ ticket_id: t.ticket_id, now: nowUtc() }, 'spend_fingerprint'],
      [{ ticket_id: 'x', write: WRITE, now: nowUtc() }, 'ticket_id'],
    ];
    for (const [body, field] of bad) {
      const r = await redeem(body as Record<string, unknown>);
      expect(r.status).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await meterRows()).length).toBe(before);
    expect((await redeem({ ticket_id: t.ticket_id, write: WRITE, now: nowUtc() })).status).toBe(200);
  });
});

describe('bind check, appendix, PAS-B', () => {
  it('decides a bind check sent beside the redeem of its job on the job as the redeem left it, whichever came first', async () => {
    const id = uniq('lic');
    await charged(id);
    const jobs = Array.from({ length: 8 }, () => uniq('job'));
    const tickets = await Promise.all(jobs.map((job) => ticketFor(id, job)));
    // Each pair is sent together, so that most land in one group: a check after the redeem must read the job again.
    const pairs = await Promise.all(
      jobs.map(async (job, i) => {
        const [redeem, check] = await Promise.all([
          post('/v1/pas/bind-ticket/redeem', { ticket_id: tickets[i]!.ticket_id, write: WRITE, now: nowUtc() }),
          post('/v1/pas/bind-check', { fuse_id: liveFuse, job_id: job }),
        ]);
        return { redeem: await redeem.json(), check: await check.json() };
      }),
    );
    for (const { redeem, check } of pairs) {
      expect(redeem).toMatchObject({ decision: 'ALLOW', redeemed: true });
      const after = index(check.receipt_id) > index(redeem.receipt_id);
      expect(check).toMatchObject(after ? { decision: 'BLOCK', code: 'already_bound' } : { decision: 'ALLOW' });
    }
  });

  it('ALLOWs an unbound job on a LIVE fuse, BLOCKs a DEAD fuse and an already bound job, each with a receipt', async () => {
    const job = uniq('job');
    const allow = await post('/v1/pas/bind-check', { fuse_id: liveFuse, job_id: job });
    expect(allow.status).toBe(200);
    const a = await allow.json();
    expect(a).toMatchObject({ decision: 'ALLOW', allow: true, job_id: job });
    expect(await verifyReceipt(a.receipt_id)).toMatchObject({ kind: 'pas_bind_check', decision: 'ALLOW', subject: job });
    const dead = await post('/v1/pas/bind-check', { fuse_id: deadFuse, job_id: job });
    expect(dead.status).toBe(403);
    expect(await dead.json()).toMatchObject({ decision: 'BLOCK', code: 'fuse_dead' });
    const id = uniq('lic');
    await charged(id);
    const t = await ticketFor(id, job);
    await post('/v1/pas/bind-ticket/redeem', { ticket_id: t.ticket_id, write: WRITE, now: nowUtc() });
    expect(await (await post('/v1/pas/bind-check', { fuse_id: liveFuse, job_id: job })).json()).toMatchObject({
      decision: 'BLOCK',
      code: 'already_bound',
    });
    const bad = await post('/v1/pas/bind-check', { fuse_id: liveFuse, job_id: job, premium: 1 });
    expect(bad.status).toBe(400);

    const appendix = await get(`/v1/pas/bind-appendix?job_id=${job}`);
    expect(appendix.status).toBe(200);
    const ap = await appendix.json();
    expect(ap).toMatchObject({ object: 'bind_appendix', job_id: job });
    expect(ap.notice).toMatch(/not the regulatory filing/);
    expect(ap.receipts.map((r: { kind: string }) => r.kind)).toEqual(
      expect.arrayContaining(['pas_bind_check', 'pas_pre_bind_a', 'pas_bind_ticket_redeem']),
    );
    expect(ap.receipts.length).toBe(5);
    // In the order they were issued, each as its receipt states it.
    expect(ap.receipts.map((r: { kind: string; decision: string }) => `${r.kind} ${r.decision}`)).toEqual([
      'pas_bind_check ALLOW',
      'pas_bind_check BLOCK',
      'pas_pre_bind_a ALLOW',
      'pas_bind_ticket_redeem ALLOW',
      'pas_bind_check BLOCK',
    ]);
    for (const r of ap.receipts)
      expect(await verifyReceipt(r.receipt_id)).toMatchObject({ kind: r.kind, decision: r.decision, issued_at: r.created_at });
    expect(ap.receipts.map((r: { verify_url: string }) => r.verify_url)).toContain(ap.verify_url);
    expect((await get(`/v1/pas/bind-appendix?job_id=${job}`, other.secret)).status).toBe(404);
    expect((await get('/v1/pas/bind-appendix?job_id=nothing_here')).status).toBe(404);
    const q = await get('/v1/pas/bind-appendix');
    expect(q.status).toBe(400);
    expect((await q.json()).errors[0].field).toBe('job_id');
  });

  it('PAS-B halts (do not call issue) until the job is bound on a LIVE parent, then proceeds', async () => {
    const id = uniq('lic');
    const job = uniq('job');
    const req = { fuse_id: liveFuse, license_id: id, job_id: job };
    const unsigned = await post('/v1/pas/pas-b/pre-bind', req);
    expect(unsigned.status).toBe(409);
    expect(await unsigned.json()).toMatchObject({
      decision: 'HALT',
      result: 'halt',
      code: 'license_not_live',
      call_issue: false,
      instruction: expect.stringMatching(/do not call issue/),
    });
    await charged(id);
    expect(await (await post('/v1/pas/pas-b/pre-bind', req)).json()).toMatchObject({ result: 'halt', code: 'not_bound' });
    const t = await ticketFor(id, job);
    await post('/v1/pas/bind-ticket/redeem', { ticket_id: t.ticket_id, write: WRITE, now: nowUtc() });
    const ok = await post('/v1/pas/pas-b/pre-bind', req);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ decision: 'ALLOW', result: 'proceed', call_issue: true });
    expect(await (await post('/v1/pas/pas-b/pre-bind', { ...req, fuse_id: deadFuse })).json()).toMatchObject({
      result: 'halt',
      code: 'hop_deny',
    });
    await post(`/v1/pas/licenses/${id}/dead`, undefined);
    expect(await (await post('/v1/pas/pas-b/pre-bind', req)).json()).toMatchObject({ result: 'halt', code: 'license_not_live' });
  });
});

function cli(args: string[]): Promise<Record<string, unknown>> {
  const { BASE_URL: _b, SITE_URL: _s, ...parent } = process.env;
  const env = { ...parent, DATABASE_URL: s.config.DATABASE_URL, SIGNING_KEY_FILE: s.config.SIGNING_KEY_FILE, LOG_LEVEL: 'silent' };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli.ts', ...args, '--json'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`cli exited ${code}: ${out}`))));
  });
}

describe('delegated authority (MGA)', () => {
  it(
    'ALLOWs within the grant and BLOCKs naming every failed limit; grants come from the CLI, per key',
    async () => {
      const g = await cli([
        'grants',
        'create',
        '--key',
        key.id,
        '--lines',
        'cyber,e_and_o',
        '--states',
        'CA,NY',
        '--max-premium',
        '25000.00',
      ]);
      expect(g).toMatchObject({ key_id: key.id, max_premium: '25000.00', lines: ['cyber', 'e_and_o'] });
      const grant = String(g.grant_id);
      const base = { fuse_id: liveFuse, grant_id: grant, premium: '25000.00', line: 'cyber', state: 'CA' };
      const ok = await post('/v1/pas/mga-authority', base);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ decision: 'ALLOW', failed: [] });
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{ premium: '25000.01' }, ['premium']],
        [{ line: 'marine' }, ['line']],
        [{ state: 'TX' }, ['state']],
        [{ fuse_id: deadFuse, premium: '99999.00', state: 'TX' }, ['fuse', 'premium', 'state']],
      ];
      for (const [change, failed] of cases) {
        const r = await post('/v1/pas/mga-authority', { ...base, ...change });
        expect(r.status).toBe(403);
        const body = await r.json();
        expect(body).toMatchObject({ decision: 'BLOCK', failed });
        expect(await verifyReceipt(body.receipt_id)).toMatchObject({ kind: 'pas_mga_authority', decision: 'BLOCK', data: { failed } });
      }
      expect((await post('/v1/pas/mga-authority', base, other.secret)).status).toBe(404);
      const bad = await post('/v1/pas/mga-authority', { ...base, premium: '-1' });
      expect(bad.status).toBe(400);
      expect((await bad.json()).errors[0].field).toBe('premium');
      // Checks sent together read their grant once, in one group: another key's checks still find no grant of theirs.
      const otherFuse = (await (await post('/v1/fuses', { state: 'LIVE' }, other.secret)).json()).fuse_id;
      const chargedBefore = (await meterRows(other.id)).length;
      const mixed = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          i % 2 ? post('/v1/pas/mga-authority', { ...base, fuse_id: otherFuse }, other.secret) : post('/v1/pas/mga-authority', base),
        ),
      );
      expect(mixed.map((r) => r.status)).toEqual(Array.from({ length: 16 }, (_, i) => (i % 2 ? 404 : 200)));
      expect((await meterRows(other.id)).length).toBe(chargedBefore);
      expect(await cli(['grants', 'revoke', grant])).toMatchObject({ revoked: true });
      expect((await post('/v1/pas/mga-authority', base)).status).toBe(404);
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});

describe('public demos on drill data', () => {
  it('answer bind check, authority and pre-bind without a key, and charge nothing', async () => {
    const before = (await chargesOf(s.ctx.ledger.read)).length;
    const allow = await post('/demo/pas/bind-check', {}, undefined);
    expect(allow.status).toBe(200);
    expect(await allow.json()).toMatchObject({ decision: 'ALLOW', demo: true });
    expect(await (await post('/demo/pas/bind-check', { fuse_id: 'fuse_drill_dead' }, undefined)).json()).toMatchObject({
      decision: 'BLOCK',
    });
    expect((await post('/demo/pas/bind-check', { fuse_id: liveFuse }, undefined)).status).toBe(404);
    const within = await post('/demo/pas/mga-authority', { premium: '1000.00', line: 'cyber', state: 'CA' }, undefined);
    expect(await within.json()).toMatchObject({ decision: 'ALLOW' });
    expect(
      await (await post('/demo/pas/mga-authority', { premium: '300000.00', line: 'cyber', state: 'WA' }, undefined)).json(),
    ).toMatchObject({ decision: 'BLOCK', failed: ['premium', 'state'] });
    const ticket = await post('/demo/pas/pas-a/pre-bind', {}, undefined);
    expect(ticket.status).toBe(200);
    expect(await ticket.json()).toMatchObject({ next_step: 'bind_only_ticket', ticket: { redeemable: false } });
    const manual = await post('/demo/pas/pas-a/pre-bind', { license_id: 'lic_drill_dead' }, undefined);
    expect(manual.status).toBe(409);
    expect(await manual.json()).toMatchObject({ next_step: 'manual_underwriting', issue: { code: 'license_not_live' } });
    expect((await chargesOf(s.ctx.ledger.read)).length).toBe(before);
  });

  it('are rate limited like the other demos', async () => {
    const small = await startTestServer({ DEMO_RATE_LIMIT: '2' });
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await small.fetch('/demo/pas/bind-check', { json: {} })).status);
      expect(codes).toEqual([200, 200, 429]);
      expect((await small.fetch('/demo/pas/mga-authority', { json: { premium: '1.00', line: 'cyber', state: 'CA' } })).status).toBe(429);
    } finally {
      await small.stop();
    }
  });
});

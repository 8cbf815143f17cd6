/**
 * x402 on every metered operation, from the declarations: a keyless call of
 * each gets 402 with the requirements of its price (before its body is read
 * for an operation with one price; once its body is read for one priced per
 * request); a paid call acts and settles once, with the payment in its answer
 * and its receipt and nothing charged to any key; a refusal before the act
 * settles nothing; with x402 off, a payment without a key is answered
 * x402_not_configured on every keyed operation. The facilitator approves
 * everything (the gate checks the terms itself: test/x402-terms.test.ts).
 */
import { decodePaymentResponseHeader } from '@x402/core/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { commitAct } from '../src/api/act.ts';
import { createApp } from '../src/api/app.ts';
import { Problem } from '../src/api/problem.ts';
import { reply } from '../src/api/reply.ts';
import { chargeView } from '../src/api/charge.ts';
import { loadConfig } from '../src/config.ts';
import { loadKeyring } from '../src/crypto/keys.ts';
import { openLedger } from '../src/ledger/db.ts';
import { paidRoutes } from '../src/payments/x402/resources.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';
import { approveAllEnv, newPayer, signPayment, startApproveAll, type ApproveAll } from './support/x402-approve-all.ts';
import { allReceipts, chargesOf } from './support/ledger-reads.ts';
import { operation } from '../src/api/operation.ts';

type J = Record<string, any>;

let s: TestServer;
let fac: ApproveAll;
const payer = newPayer();

beforeAll(async () => {
  fac = await startApproveAll();
  s = await startTestServer(approveAllEnv(fac.url));
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
});

const count = async (sql: string) => Number((await s.ctx.ledger.read.execute(sql)).rows[0]!.n);
const concrete = (path: string) => path.replace(/:([A-Za-z_]+)/g, 'x');

/** The price this request is asked (its 402 without a payment), in atomic units (6 decimals: micro-USD). */
async function priceOf(path: string, body: unknown): Promise<bigint> {
  const r = await s.fetch(path, { json: body });
  expect(r.status, `${path} without a payment`).toBe(402);
  await r.arrayBuffer();
  return BigInt((JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString()) as J).accepts[0].amount);
}

async function paid(path: string, body: unknown, o: { header?: string } = {}) {
  const header = o.header ?? (await signPayment({ payer, price: await priceOf(path, body), resource: s.config.BASE_URL + path }));
  const r = await s.fetch(path, { json: body, headers: { 'payment-signature': header } });
  return { r, body: (await r.json()) as J, header };
}

describe('x402 on every metered operation', { timeout: 60_000 }, () => {
  it('each paid operation answers a keyless call 402 with its own requirements: at its one price before its body is read, or once its body is read', async () => {
    const routes = paidRoutes(s.app.router.routes);
    // Every metered operation an agent performs, but those docs/x402.md lists as taking no payment.
    expect(routes.length).toBeGreaterThanOrEqual(25);
    expect(routes.filter((r) => !r.fixed).length).toBeGreaterThanOrEqual(10);
    for (const r of routes) {
      const init: RequestInit =
        r.method === 'GET' ? {} : { method: r.method, headers: { 'content-type': 'application/json' }, body: '{ not json' };
      const res = await fetch(s.url + concrete(r.path), init);
      if (!r.fixed) {
        // Priced per request: nothing is asked for a body that cannot be priced.
        expect([res.status, ((await res.json()) as J).code], `${r.method} ${r.path}`).toEqual([400, 'malformed_json']);
        continue;
      }
      expect(res.status, `${r.method} ${r.path}`).toBe(402);
      const req = JSON.parse(Buffer.from(res.headers.get('payment-required')!, 'base64').toString()) as J;
      expect(req.resource.url, r.path).toBe(s.config.BASE_URL + r.path);
      expect(req.accepts[0], r.path).toMatchObject({ scheme: 'exact', amount: String(r.micros), payTo: approveAllEnv('').X402_PAY_TO });
      await res.arrayBuffer();
    }
  });

  it('a paid classify acts and settles once: the answer and its receipt name the payment, no key is charged, a replay is refused', async () => {
    const meter = (await chargesOf(s.ctx.ledger.read)).length;
    const settles = fac.calls.settle;
    const { r, body, header } = await paid('/v1/classify', { text: 'wire 5,000 USD to the supplier' });
    expect(r.status).toBe(200);
    expect(body.payment).toMatchObject({ protocol: 'x402', payer: payer.address, amount: '50000', settled: true });
    expect(decodePaymentResponseHeader(r.headers.get('payment-response')!).success).toBe(true);
    expect(fac.calls.settle).toBe(settles + 1);
    expect((await chargesOf(s.ctx.ledger.read)).length).toBe(meter);
    const rc = (await (await s.fetch(`/v1/receipts/${body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(body.payment.transaction);
    expect(await count(`SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settled' AND receipt_id = '${body.receipt_id}'`)).toBe(1);

    const again = await paid('/v1/classify', { text: 'wire 5,000 USD to the supplier' }, { header });
    expect(again.r.status).toBe(402);
    expect(again.body).toMatchObject({ code: 'x402_payment_used', receipt_id: body.receipt_id });
    expect(fac.calls.settle).toBe(settles + 1);
  });

  it('paid acts of other kinds: a welded act on a drill fuse, an ORN declaration with its record, an ASTL publish, the execute gate with its signed receipt', async () => {
    const act = await paid('/v1/act', { fuse_id: 'fuse_drill_live', action: { kind: 'pay' } });
    expect(act.r.status, JSON.stringify(act.body)).toBe(200);
    // An act that acted pays the hop and the seal, as a key is charged: 0.15, shown as its two lines.
    expect(act.body.payment).toMatchObject({ settled: true, amount: '150000' });
    expect(act.body.charges).toEqual([
      { sku: 'execute_gate', amount_usd: '0.10', nap: false },
      { sku: 'seal', amount_usd: '0.05', nap: false },
    ]);
    expect(act.body).not.toHaveProperty('charge');

    const orn = await paid('/api/v1/orn/declare', {
      event_ref: 'incident-42',
      graph_id: 'swarm-7',
      loss_usd: '9000.00',
      parties: [
        { party_id: 'planner', contributed_value_usd: '20000' },
        { party_id: 'executor', contributed_value_usd: '10000' },
      ],
    });
    expect(orn.r.status, JSON.stringify(orn.body)).toBe(200);
    expect(orn.body.payment).toMatchObject({ settled: true });

    const astl = await paid('/api/v1/astl/publish', { entity: 'agent:acme-buyer', preset: 'agentic' });
    expect(astl.r.status, JSON.stringify(astl.body)).toBe(201);
    expect(astl.body.payment).toMatchObject({ settled: true });

    const gate = await paid('/api/v1/execute-gate', { fuse_id: 'fuse_drill_live', action: { kind: 'pay' }, exposure_usd: '1250.00' });
    expect([200, 403, 409], JSON.stringify(gate.body)).toContain(gate.r.status);
    expect(gate.body.payment).toMatchObject({ settled: true });
    const rc = (await (await s.fetch(`/v1/receipts/${gate.body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(gate.body.payment.transaction);
    // A signed receipt handed to the caller is the one the log holds (signed again with the payment in it).
    expect(gate.body.receipt).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(JSON.stringify(rc)).toContain(gate.body.receipt);
    const claims = JSON.parse(Buffer.from(gate.body.receipt.split('.')[1], 'base64url').toString()) as J;
    expect(claims.data.payment.transaction).toBe(gate.body.payment.transaction);
  });

  it('refused before the act (bad input, an unknown fuse): nothing verified or settled, nothing recorded', async () => {
    const before = { ...fac.calls, payments: await count('SELECT COUNT(*) AS n FROM x402_payments') };
    const bad = await paid(
      '/v1/classify',
      { text: '' },
      { header: await signPayment({ payer, price: 50_000n, resource: s.config.BASE_URL + '/v1/classify' }) },
    );
    expect(bad.r.status).toBe(400);
    const unknown = await paid(
      '/v1/act',
      { fuse_id: 'fuse_nobody_knows', action: { kind: 'pay' } },
      { header: await signPayment({ payer, price: 150_000n, resource: s.config.BASE_URL + '/v1/act' }) },
    );
    expect(unknown.r.status).toBe(404);
    // Without a payment the unknown fuse is a 404 too: no price is asked for what cannot be sold.
    expect((await s.fetch('/v1/act', { json: { fuse_id: 'fuse_nobody_knows', action: { kind: 'pay' } } })).status).toBe(404);
    expect(fac.calls.settle).toBe(before.settle);
    expect(await count('SELECT COUNT(*) AS n FROM x402_payments')).toBe(before.payments);
  });

  it('a payment without a key on an operation that takes none: x402_not_accepted', async () => {
    const r = await s.fetch('/v1/me', { headers: { 'payment-signature': 'e30=' } });
    expect(r.status).toBe(401);
    expect(((await r.json()) as J).code).toBe('x402_not_accepted');
  });
});

describe('x402 off', { timeout: 60_000 }, () => {
  it('a payment without a key is answered 401 x402_not_configured on every keyed operation', async () => {
    const plain = await startTestServer();
    try {
      const keyed = plain.app.router.routes.filter((r) => r.doc?.auth === 'key');
      expect(keyed.length).toBeGreaterThan(50);
      for (const r of keyed) {
        const res = await fetch(plain.url + concrete(r.path), {
          method: r.method,
          headers: { 'payment-signature': 'e30=', 'content-type': 'application/json' },
          ...(r.method === 'GET' ? {} : { body: '{}' }),
        });
        const body = (await res.json()) as J;
        expect([res.status, body.code], `${r.method} ${r.path}`).toEqual([401, 'x402_not_configured']);
      }
    } finally {
      await plain.stop();
    }
  });
});

describe('a paid act refused after its payment settled', { timeout: 60_000 }, () => {
  it('the payment gets its own receipt (x402_payment, REFUSED) and the problem names it; settled once, nothing charged', async () => {
    const config = loadConfig(testEnv(tempDir(), { ...approveAllEnv(fac.url), BASE_URL: 'http://gate.test' }));
    const ledger = await openLedger(config);
    const ctx = { config, ledger, keyring: await loadKeyring(config), version: 't', log: () => undefined };
    // An operation whose state changes between the check (decided and rolled back) and the commit.
    let decided = 0;
    const { h3 } = createApp(ctx, [
      (router, c) =>
        operation(
          router,
          c,
          {
            method: 'POST',
            path: '/test/flaky',
            auth: 'key',
            summary: 'flaky',
            tag: 'test',
            body: z.strictObject({ n: z.number() }),
            charges: ['classify'],
            act: {},
          },
          async ({ input: body, key, event }) => {
            return commitAct(event, c, key, {
              decide: (state) => {
                if (++decided > 1)
                  throw new Problem({ status: 409, code: 'changed_meanwhile', title: 'Conflict', detail: 'the state changed' });
                const receipt = state.receipt(
                  c,
                  { kind: 'flaky', decision: 'DONE', key_id: key.id },
                  { charges: [{ keyId: key.id, sku: 'classify', amountMicros: 50_000 }] },
                );
                return { writes: { receipt }, reply: reply({ n: body.n }) };
              },
            });
          },
        ),
    ]);
    try {
      const settles = fac.calls.settle;
      const header = await signPayment({ payer, price: 50_000n, resource: 'http://gate.test/test/flaky' });
      const r = await h3.request('/test/flaky', {
        method: 'POST',
        body: JSON.stringify({ n: 1 }),
        headers: { 'content-type': 'application/json', 'payment-signature': header },
      });
      const body = (await r.json()) as J;
      expect(r.status).toBe(409);
      expect(body).toMatchObject({
        code: 'changed_meanwhile',
        payment: { settled: true, payer: payer.address, receipt_id: expect.stringMatching(/^rcpt_/) },
      });
      expect(r.headers.get('payment-response')).toBeTruthy();
      expect(fac.calls.settle).toBe(settles + 1);
      const rows = (await ledger.read.execute('SELECT state, receipt_id FROM x402_payments')).rows;
      expect(rows).toEqual([expect.objectContaining({ state: 'settled', receipt_id: body.payment.receipt_id })]);
      const receipts = await allReceipts(ledger.read);
      expect(receipts.map((r) => r.payload)).toEqual([expect.objectContaining({ kind: 'x402_payment', decision: 'REFUSED' })]);
      expect(await chargesOf(ledger.read)).toHaveLength(0);
    } finally {
      await ledger.close();
    }
  });
});

describe('a paid act decided again at its commit', { timeout: 60_000 }, () => {
  it('keeps the price it was asked and paid: its answer shows the lines the payment paid, not the ones decided at the commit', async () => {
    const config = loadConfig(testEnv(tempDir(), { ...approveAllEnv(fac.url), BASE_URL: 'http://gate.test' }));
    const ledger = await openLedger(config);
    const ctx = { config, ledger, keyring: await loadKeyring(config), version: 't', log: () => undefined };
    // An operation whose decision changes between the dry run that prices it and the commit (a fuse blown meanwhile).
    let decided = 0;
    const { h3 } = createApp(ctx, [
      (router, c) =>
        operation(
          router,
          c,
          {
            method: 'POST',
            path: '/test/repriced',
            auth: 'key',
            summary: 'repriced',
            tag: 'test',
            body: z.strictObject({ n: z.number() }),
            charges: ['execute_gate', 'hold'],
            act: {},
          },
          async ({ key, event, bill }) => {
            return commitAct(event, c, key, {
              decide: (state) => {
                const line = { keyId: key.id, ...bill(++decided > 2 ? 'hold' : 'execute_gate') };
                const receipt = state.receipt(
                  c,
                  { kind: 'repriced', decision: decided > 2 ? 'DENY' : 'PERMIT', key_id: key.id },
                  { charges: [line] },
                );
                return { writes: { receipt }, reply: reply({ decision: receipt.payload.decision, charge: chargeView(line) }) };
              },
            });
          },
        ),
    ]);
    try {
      const post = (headers: Record<string, string> = {}) =>
        h3.request('/test/repriced', {
          method: 'POST',
          body: JSON.stringify({ n: 1 }),
          headers: { 'content-type': 'application/json', ...headers },
        });
      const quote = await post();
      expect(quote.status).toBe(402);
      expect(JSON.parse(Buffer.from(quote.headers.get('payment-required')!, 'base64').toString()).accepts[0].amount).toBe('100000');
      const r = await post({
        'payment-signature': await signPayment({ payer, price: 100_000n, resource: 'http://gate.test/test/repriced' }),
      });
      const body = (await r.json()) as J;
      expect(r.status).toBe(200);
      expect(body).toMatchObject({
        decision: 'DENY',
        charge: { sku: 'execute_gate', amount_usd: '0.10', nap: false },
        payment: { amount: '100000', settled: true },
      });
      expect(await chargesOf(ledger.read)).toHaveLength(0);
    } finally {
      await ledger.close();
    }
  });
});

describe('what a keyless payer may change: its own things, never the public drill fuses', { timeout: 60_000 }, () => {
  const other = newPayer();
  const paidBy = async (who: ReturnType<typeof newPayer>, path: string, body: unknown) => {
    const header = await signPayment({ payer: who, price: await priceOf(path, body), resource: s.config.BASE_URL + path });
    const r = await s.fetch(path, { json: body, headers: { 'payment-signature': header } });
    return { r, body: (await r.json()) as J };
  };

  it('no payer may panic a drill fuse: 403 before anything is settled, and every demo still finds it LIVE', async () => {
    const settles = fac.calls.settle;
    const header = await signPayment({
      payer,
      price: await priceOf('/v1/fuses/fuse_drill_live/panic', { reason: 'because I can' }),
      resource: s.config.BASE_URL + '/v1/fuses/:fuse_id/panic',
    });
    const r = await s.fetch('/v1/fuses/fuse_drill_live/panic', {
      json: { reason: 'because I can' },
      headers: { 'payment-signature': header },
    });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: 'drill_fuse_public', fuse_id: 'fuse_drill_live', state: 'LIVE' });
    expect(fac.calls.settle).toBe(settles);
    expect(await (await s.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_live' } })).json()).toMatchObject({
      state: 'LIVE',
      decision: 'PERMIT',
    });
    // A payer still hops on it, as the public does.
    const hop = await paid('/v1/fuse/hop', { fuse_id: 'fuse_drill_live', action: { kind: 'pay' } });
    expect(hop.body).toMatchObject({ state: 'LIVE', decision: 'PERMIT', payment: { settled: true } });
  });

  it('an ASTL entity is bound to the address that paid for it: another payer cannot publish its next version', async () => {
    const first = await paidBy(payer, '/api/v1/astl/publish', { entity: 'agent:paid-for', preset: 'agentic' });
    expect(first.r.status, JSON.stringify(first.body)).toBe(201);
    // The paid answer is the whole answer (its inclusion proof is completed at the group's end), with the payment.
    expect(first.body).toMatchObject({
      manifest: { entity: 'agent:paid-for', version: 1 },
      inclusion: { index: first.body.index },
      payment: { settled: true },
    });
    const settles = fac.calls.settle;
    const hijack = await paidBy(other, '/api/v1/astl/publish', { entity: 'agent:paid-for', act_kinds: ['wire'] });
    expect(hijack.r.status).toBe(403);
    expect(hijack.body.code).toBe('entity_owned');
    expect(fac.calls.settle).toBe(settles);
    const next = await paidBy(payer, '/api/v1/astl/publish', { entity: 'agent:paid-for', act_kinds: ['pay', 'refund'] });
    expect(next.r.status, JSON.stringify(next.body)).toBe(201);
    expect(next.body.manifest?.version, JSON.stringify(next.body)).toBe(2);
    // An account's key is no more its owner than another payer is.
    const key = await s.newKey('astl-stranger');
    expect((await s.fetch('/api/v1/astl/publish', { key: key.secret, json: { entity: 'agent:paid-for', preset: 'agentic' } })).status).toBe(
      403,
    );
  });

  it("what a payer makes is its own: another payer's twin is unknown to it", async () => {
    const tokenized = await paidBy(payer, '/api/v1/depository/attest', { event_type: 'tokenize', asset_id: 'PAYER-ASSET-1', units: 100 });
    expect(tokenized.r.status, JSON.stringify(tokenized.body)).toBe(200);
    const minted = await paidBy(other, '/api/v1/depository/attest', { event_type: 'burn', asset_id: 'PAYER-ASSET-1', units: 100 });
    expect(minted.r.status).toBe(404);
    expect(minted.body.code).toBe('unknown_asset');
    const own = await paidBy(payer, '/api/v1/depository/attest', { event_type: 'burn', asset_id: 'PAYER-ASSET-1', units: 40 });
    expect(own.body).toMatchObject({ after: { token_supply: 60 }, chain: { seq: 2 } });
  });
});

describe('the drill fuses return to their documented state', { timeout: 60_000 }, () => {
  it('a server that starts on a database where a drill fuse was changed puts it back, with a receipt of the restore', async () => {
    const dir = tempDir();
    const first = await startTestServer({}, dir);
    // As main let any x402 payer do: fuse_drill_live panicked to DEAD, fuse_drill_dead charged to LIVE.
    await first.ctx.ledger.write(async (tx) => {
      await tx.execute("UPDATE fuses SET state = 'DEAD' WHERE id = 'fuse_drill_live'");
      await tx.execute("UPDATE fuses SET state = 'LIVE' WHERE id = 'fuse_drill_dead'");
    });
    await first.close();
    const again = await startTestServer({}, dir);
    try {
      expect(await (await again.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_live' } })).json()).toMatchObject({
        state: 'LIVE',
        decision: 'PERMIT',
      });
      expect(await (await again.fetch('/demo/hop', { json: { fuse_id: 'fuse_drill_dead' } })).json()).toMatchObject({
        state: 'DEAD',
        decision: 'DENY',
      });
      const restores = (await allReceipts(again.ctx.ledger.read))
        .filter((r) => r.payload.kind === 'drill_restore')
        .map((r) => [r.payload.subject, r.payload.decision, (r.payload.data as J).from]);
      expect(restores.sort()).toEqual([
        ['fuse_drill_dead', 'DEAD', 'LIVE'],
        ['fuse_drill_live', 'LIVE', 'DEAD'],
      ]);
    } finally {
      await again.stop();
    }
  });
});

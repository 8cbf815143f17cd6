import { createServer as createNetServer } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H3, toNodeHandler } from 'h3';
import { checkConformance, memoryClaims, remoteReceiptVerifier, requireReceipt } from '../src/rr1/index.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('RR-1 require-receipt: middleware, manifest, 428 flow, replay, conformance', () => {
  let s: TestServer;
  let base: string;
  let key: { id: string; secret: string };
  const fuses: Record<string, string> = {};
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });
  const act = (receipt?: string, k?: string) =>
    s.fetch('/api/v1/require-receipt/demo/pay', {
      method: 'POST',
      json: { amount: '10.00' },
      ...(k ? { key: k } : {}),
      headers: receipt ? { 'gate-receipt': receipt } : {},
    });
  const permit = async (kind = 'pay') =>
    (await (await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind } })).json()).receipt as string;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    s = await startTestServer({
      PORT: String(port),
      BASE_URL: base,
      SITE_URL: base,
      DEMO_RATE_LIMIT: '1000',
      DEMO_RATE_WINDOW_SECONDS: '31536000',
    });
    key = await s.newKey('agent');
    for (const name of ['LIVE', 'DEAD'] as const) fuses[name] = (await (await post('/v1/fuses', { state: 'LIVE' })).json()).fuse_id;
    await post(`/v1/fuses/${fuses.DEAD}/dead`, undefined);
  });
  afterAll(() => s.stop());

  it('the manifest names the running gate and its irreversible act', async () => {
    const m = await (await s.fetch('/.well-known/agent-actions.json')).json();
    expect(m).toMatchObject({ standard: 'RR-1', header: 'Receipt-Required', status_code: 428, gate: base });
    expect(m.actions).toEqual([
      {
        act: 'pay',
        method: 'POST',
        url: `${base}/api/v1/require-receipt/demo/pay`,
        irreversible: true,
        receipt_header: 'Gate-Receipt',
        obtain_receipt: `${base}/api/v1/execute-gate`,
      },
    ]);
  });

  it('without a receipt: 428 with Receipt-Required; a keyed challenge is charged 0.02, an anonymous one nothing', async () => {
    const r = await act();
    expect(r.status).toBe(428);
    expect(r.headers.get('receipt-required')).toBe(`act="pay", gate="${base}", header="Gate-Receipt", reason="receipt_missing"`);
    expect(r.headers.get('content-type')).toContain('application/problem+json');
    expect((await r.json()).code).toBe('receipt_missing');
    expect((await act(undefined, key.secret)).status).toBe(428);
    expect((await chargesOf(s.ctx.ledger.read, key.id)).map((x) => [x.sku, x.amount_micros])).toEqual([['rr1_challenge', 20_000]]);
    expect((await chargesOf(s.ctx.ledger.read)).filter((x) => x.sku === 'rr1_challenge')).toHaveLength(1);
  });

  it('a PERMIT receipt for the act passes once; its replay is refused', async () => {
    const receipt = await permit();
    const ok = await act(receipt);
    expect(ok.status).toBe(200);
    const b = await ok.json();
    expect(b).toMatchObject({ acted: true, act: 'pay' });
    const again = await act(receipt);
    expect(again.status).toBe(428);
    expect((await again.json()).code).toBe('receipt_replayed');
  });

  it('refuses DENY and HOLD receipts, receipts for another act, and tampered or unsigned ones', async () => {
    const deny = (await (await post('/api/v1/execute-gate', { fuse_id: fuses.DEAD, action: { kind: 'pay' } })).json()).receipt;
    const hold = (
      await (await post('/api/v1/execute-gate', { fuse_id: fuses.LIVE, action: { kind: 'pay' }, review_requested: true })).json()
    ).receipt;
    const wire = await permit('wire');
    const good = await permit();
    const [h, p, sig] = good.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, receipt_id: 'rcpt_other' })).toString('base64url')}.${sig}`;
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'fusegate-receipt+jws' })).toString('base64url')}.${p}.`;
    for (const [jws, code] of [
      [deny, 'receipt_not_permit'],
      [hold, 'receipt_not_permit'],
      [wire, 'receipt_wrong_act'],
      [tampered, 'receipt_unsigned'],
      [unsigned, 'receipt_unsigned'],
      ['garbage', 'receipt_unsigned'],
    ] as const) {
      const r = await act(jws);
      expect(r.status, code).toBe(428);
      expect((await r.json()).code).toBe(code);
    }
    // the untouched receipt still works: refusals claimed nothing
    expect((await act(good)).status).toBe(200);
  });

  it('the middleware is reusable: another h3 service verifies our receipts through the published JWKS (jose)', async () => {
    const app = new H3();
    app.post('/wire', () => ({ wired: true }), {
      middleware: [
        requireReceipt({
          act: 'wire',
          gate: base,
          verify: remoteReceiptVerifier(`${base}/.well-known/prefinality-jwks.json`),
          claim: memoryClaims(),
        }),
      ],
    });
    const other = createServer(toNodeHandler(app));
    const url = await listen(other);
    try {
      const wire = await permit('wire');
      const call = (r?: string) => fetch(`${url}/wire`, { method: 'POST', headers: r ? { 'gate-receipt': r } : {} });
      expect((await call()).status).toBe(428);
      const ok = await call(wire);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ wired: true });
      expect((await call(wire)).status).toBe(428);
      expect((await call(await permit('pay'))).status).toBe(428);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });

  it('conformance: this service is RR-1 conformant (with a real receipt, replay included); a service without 428 is not', async () => {
    const r = await checkConformance(base, { receipt: await permit() });
    expect(r.steps.map((x) => [x.step, x.ok])).toEqual([
      ['manifest', true],
      ['challenge', true],
      ['replay', true],
    ]);
    expect(r).toMatchObject({ conformant: true, badge: 'RR-1 conformant' });

    // A service that publishes a manifest but lets every act through.
    let lax = '';
    const naive = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/agent-actions.json') {
        res.end(
          JSON.stringify({
            standard: 'RR-1',
            header: 'Receipt-Required',
            status_code: 428,
            gate: base,
            actions: [{ act: 'pay', method: 'POST', url: `${lax}/pay` }],
          }),
        );
      } else res.end('{"paid":true}');
    });
    lax = await listen(naive);
    try {
      const bad = await checkConformance(lax);
      expect(bad.conformant).toBe(false);
      expect(bad.badge).toBeNull();
      expect(bad.steps.map((x) => [x.step, x.ok])).toEqual([
        ['manifest', true],
        ['challenge', false],
        ['replay', false],
      ]);
      const none = await checkConformance('http://127.0.0.1:9');
      expect(none.steps).toEqual([expect.objectContaining({ step: 'manifest', ok: false })]);
    } finally {
      await new Promise((r) => naive.close(r));
    }
  });

  it('scale: challenges x 0.02', async () => {
    const d = await (await s.fetch('/api/v1/require-receipt/scale?challenges_per_month=100')).json();
    expect(d).toMatchObject({ illustrative: true, monthly_usd: '2.00' });
  });
});

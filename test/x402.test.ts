/**
 * x402 payments end to end, on real parts: an in-process EVM chain (Hardhat's
 * EDR) with an EIP-3009 token compiled by solc, a local facilitator built on
 * the official @x402/core + @x402/evm packages on a real HTTP port, a payer
 * that signs EIP-712 authorizations (the official @x402/fetch client, or viem
 * by hand for the bad cases), and the gate on its own port and libSQL file.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { getAddress, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoveryDocumentSchema, x402BazaarSchema, x402Schema } from '../src/catalog/schemas.ts';
import { httpFacilitator } from '../src/payments/x402/facilitator.ts';
import { reconcileX402Payments } from '../src/payments/x402/reconcile.ts';
import { x402SetupOf } from '../src/payments/x402/settings.ts';
import { facilitatorOf } from '../src/payments/x402/service.ts';
import { CHAIN_ID, NETWORK, startTestChain, type TestChain } from './support/evm-chain.ts';
import { untilCommitted } from './support/commits.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startTestFacilitator, type TestFacilitator } from './support/x402-facilitator.ts';
import { chargesOf, receiptCount } from './support/ledger-reads.ts';

const run = promisify(execFile);
const PRICE = 100_000n; // the GO toll, 0.10 USD, in 6-decimal units
const HOLD_PRICE = 500_000n; // the NAP hold of a refusal, 0.50 USD
const GO_BODY = {
  rail: 'x402',
  transfer: { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' },
};
const NO_GO_BODY = { rail: 'x402', transfer: { amount: '0.25', currency: 'USDC' } };
const EVALUATE = '/v1/prefinality/evaluate';
/** The local facilitator demands this credential, as a hosted one would. */
const FACILITATOR_AUTH = 'Bearer facilitator-test-credential';

type J = Record<string, any>;

let chain: TestChain;
let fac: TestFacilitator;
let s: TestServer;

function x402Env(facilitatorUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    X402_PAY_TO: chain.payTo,
    X402_NETWORK: NETWORK,
    X402_ASSET: chain.token,
    X402_ASSET_NAME: 'USD Coin',
    X402_ASSET_VERSION: '2',
    X402_FACILITATOR_URL: facilitatorUrl,
    X402_FACILITATOR_AUTH_HEADER: `Authorization: ${FACILITATOR_AUTH}`,
    // Generous: on a loaded machine a real settle (simulate, send, mine, confirm) can take seconds.
    X402_FACILITATOR_TIMEOUT_MS: '30000',
    ...extra,
  };
}

// A loaded machine (two cores, several suites) makes real chain work slow: the timeouts are generous, the assertions exact.
beforeAll(async () => {
  chain = await startTestChain({ tokenName: 'USD Coin', tokenVersion: '2', funded: 10_000_000n });
  fac = await startTestFacilitator(chain, FACILITATOR_AUTH);
  s = await startTestServer(x402Env(fac.url));
}, 120_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
  await chain?.close();
});

/** The official client: pays any x402 402 up to `cap` with the payer's key, and records the payment headers it sent. */
function payingFetch(cap = PRICE) {
  const sent: string[] = [];
  const recording: typeof fetch = async (input, init) => {
    const h = new Headers(input instanceof Request ? input.headers : init?.headers);
    const p = h.get('payment-signature');
    if (p) sent.push(p);
    return fetch(input, init);
  };
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(toClientEvmSigner(chain.payer)) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: chain.token, maxAmountPerPayment: cap.toString() }] },
  });
  return { pay: wrapFetchWithPayment(recording, client), sent };
}

/** A v2 payment signed by hand (viem EIP-712), with any field made wrong on purpose. */
async function signedPayment(
  over: { amount?: string; network?: string; validBefore?: bigint; value?: bigint; srv?: TestServer; path?: string } = {},
): Promise<string> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const accepted: PaymentRequirements = {
    scheme: 'exact',
    network: (over.network ?? NETWORK) as PaymentRequirements['network'],
    amount: over.amount ?? PRICE.toString(),
    asset: chain.token,
    payTo: chain.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  };
  const authorization = {
    from: chain.payer.address,
    to: getAddress(chain.payTo),
    value: over.value ?? BigInt(accepted.amount),
    validAfter: now - 600n,
    validBefore: over.validBefore ?? now + 60n,
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await chain.payer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: CHAIN_ID, verifyingContract: getAddress(chain.token) },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: { url: (over.srv ?? s).config.BASE_URL + (over.path ?? EVALUATE), description: 'evaluate', mimeType: 'application/json' },
    accepted,
    payload: {
      signature,
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
    },
  };
  return encodePaymentSignatureHeader(payload);
}

const count = async (srv: TestServer, sql: string) => Number((await srv.ctx.ledger.read.execute(sql)).rows[0]!.n);
const receipts = (srv: TestServer) => receiptCount(srv.ctx.ledger.read);
const charges = async (srv: TestServer) => (await chargesOf(srv.ctx.ledger.read)).length;

async function paidPost(srv: TestServer, header: string, body: unknown = GO_BODY) {
  const r = await srv.fetch(EVALUATE, { json: body, headers: { 'payment-signature': header } });
  return { r, body: (await r.json()) as J };
}

describe('x402 on evaluate: 402 → pay → GO with receipt → the token moved on chain', { timeout: 120_000 }, () => {
  let firstPayment: string;
  let firstReceipt: string;

  it('pays with the official client: GO, PAYMENT-RESPONSE, a receipt naming the payment, the balance moved, no key charged', async () => {
    const before = { payer: await chain.balanceOf(chain.payer.address), payTo: await chain.balanceOf(chain.payTo) };
    const { pay, sent } = payingFetch();
    const r = await pay(s.url + EVALUATE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(GO_BODY),
    });
    const body = (await r.json()) as J;
    expect(r.status).toBe(200);
    expect(body).toMatchObject({ decision: 'GO', demo: false, charge: { sku: 'execute_gate', amount_usd: '0.10', nap: false } });
    expect(sent).toHaveLength(1);
    firstPayment = sent[0]!;

    const settlement = decodePaymentResponseHeader(r.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: NETWORK });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(body.payment).toMatchObject({
      payer: chain.payer.address,
      amount: PRICE.toString(),
      network: NETWORK,
      transaction: settlement.transaction,
      settled: true,
    });

    // The transaction is real: mined, successful, and the balances moved by exactly the price.
    const tx = await chain.publicClient.getTransactionReceipt({ hash: settlement.transaction as `0x${string}` });
    expect(tx.status).toBe('success');
    expect(await chain.balanceOf(chain.payer.address)).toBe(before.payer - PRICE);
    expect(await chain.balanceOf(chain.payTo)).toBe(before.payTo + PRICE);

    // The log receipt records the payment; the JWT names the payer.
    const rc = (await (await s.fetch(`/v1/receipts/${body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(settlement.transaction);
    expect(JSON.stringify(rc)).toContain(chain.payer.address);
    firstReceipt = body.receipt_id;
    const claims = JSON.parse(Buffer.from(body.receipt_jwt.split('.')[1], 'base64url').toString()) as J;
    expect(claims.sub).toBe(`x402:${NETWORK}:${chain.payer.address}`);
    expect(await charges(s)).toBe(0);
    expect(await count(s, "SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settled'")).toBe(1);
  });

  it('refuses a replay before asking the facilitator (it would still call it valid), naming the receipt it paid for', async () => {
    const calls = fac.calls.verify;
    const n = await receipts(s);
    const { r, body } = await paidPost(s, firstPayment);
    expect(r.status).toBe(402);
    expect(body).toMatchObject({ code: 'x402_payment_used', payment_state: 'settled', receipt_id: firstReceipt, x402Version: 1 });
    expect(r.headers.get('payment-required')).toBeTruthy();
    expect(fac.calls.verify).toBe(calls);
    expect(await receipts(s)).toBe(n);
  });

  it('refuses a wrong amount, a wrong network, an expired or too small authorization, with the fields that differ', async () => {
    const bal = await chain.balanceOf(chain.payer.address);
    const n = await receipts(s);
    const low = await paidPost(s, await signedPayment({ amount: '1', value: 1n }));
    expect(low.r.status).toBe(402);
    expect(low.body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['amount'] });
    const net = await paidPost(s, await signedPayment({ network: 'eip155:8453' }));
    expect(net.r.status).toBe(402);
    expect(net.body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['network'] });
    const expired = await paidPost(s, await signedPayment({ validBefore: BigInt(Math.floor(Date.now() / 1000) - 30) }));
    expect(expired.r.status).toBe(402);
    expect(expired.body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['valid_before'] });
    // An authorization for less than the price, presented as the right amount: the gate refuses it itself.
    const under = await paidPost(s, await signedPayment({ value: 1n }));
    expect(under.r.status).toBe(402);
    expect(under.body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['value'] });
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal);
    expect(await receipts(s)).toBe(n);
    const garbage = await paidPost(s, '%%%');
    expect(garbage.body.code).toBe('x402_payment_malformed');
  });

  it('settles only a GO: a NO_GO with a valid payment costs nothing and leaves the authorization unused', async () => {
    const bal = await chain.balanceOf(chain.payer.address);
    const header = await signedPayment();
    const no = await paidPost(s, header, NO_GO_BODY);
    expect(no.r.status).toBe(403);
    expect(no.r.headers.get('payment-response')).toBeNull();
    expect(no.body.payment).toMatchObject({ settled: false, payer: chain.payer.address });
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal);
    // The same authorization then pays for a GO.
    const go = await paidPost(s, header);
    expect(go.r.status).toBe(200);
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
  });

  it('an x402 v1 client pays with X-PAYMENT (network "base-sepolia") and gets X-PAYMENT-RESPONSE', async () => {
    const r402 = await s.fetch(EVALUATE, { json: GO_BODY });
    const v1 = ((await r402.json()) as J).accepts[0] as J;
    expect(v1).toMatchObject({ network: 'base-sepolia', maxAmountRequired: PRICE.toString(), asset: chain.token });
    const payload = await new ExactEvmSchemeV1(toClientEvmSigner(chain.payer)).createPaymentPayload(1, v1 as PaymentRequirements);
    const bal = await chain.balanceOf(chain.payer.address);
    const r = await s.fetch(EVALUATE, {
      json: GO_BODY,
      headers: { 'x-payment': encodePaymentSignatureHeader(payload as unknown as PaymentPayload) },
    });
    const body = (await r.json()) as J;
    expect(r.status).toBe(200);
    expect(body.decision).toBe('GO');
    expect(r.headers.get('payment-response')).toBeNull();
    expect(decodePaymentResponseHeader(r.headers.get('x-payment-response')!)).toMatchObject({ success: true });
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
  });

  it('one payment sent twice at once pays for one act: one GO, one refused as spent, the token moved once', async () => {
    const header = await signedPayment();
    const bal = await chain.balanceOf(chain.payer.address);
    const [a, b] = await Promise.all([paidPost(s, header), paidPost(s, header)]);
    expect([a.r.status, b.r.status].sort()).toEqual([200, 402]);
    // Which words the second gets depends on where it meets the first: at the claim (x402_payment_used), or,
    // when the first has already settled, at the facilitator's verify of a nonce now spent on chain (invalid).
    expect(['x402_payment_used', 'x402_payment_invalid']).toContain((a.r.status === 402 ? a : b).body.code);
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
  });

  it('a settlement that fails after the GO gives a 402, no receipt, no act; the payment cannot be tried again', async () => {
    const header = await signedPayment();
    const bal = await chain.balanceOf(chain.payer.address);
    const n = await receipts(s);
    // Between verify and settle the payer spends its whole balance: the real transfer then reverts.
    await chain.provider.request({ method: 'hardhat_setBalance', params: [chain.payer.address, '0xde0b6b3a7640000'] });
    const sink = '0x000000000000000000000000000000000000dEaD';
    let drained = false;
    fac.facilitator.onBeforeSettle(async () => {
      if (drained) return;
      drained = true;
      const { createWalletClient, custom } = await import('viem');
      const { chain: def } = await import('./support/evm-chain.ts');
      const w = createWalletClient({ account: chain.payer, chain: def, transport: custom(chain.provider), pollingInterval: 10 });
      const h = await w.writeContract({ address: chain.token, abi: chain.tokenAbi, functionName: 'transfer', args: [sink, bal] });
      await chain.publicClient.waitForTransactionReceipt({ hash: h });
    });
    const { r, body } = await paidPost(s, header);
    expect(r.status).toBe(402);
    expect(body.code).toBe('x402_settlement_failed');
    expect(await receipts(s)).toBe(n);
    expect(await count(s, "SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'failed'")).toBe(1);
    expect((await paidPost(s, header)).body).toMatchObject({ code: 'x402_payment_used', payment_state: 'failed' });
    // Refill the payer for the tests that follow.
    const mint = await chain.facilitatorClient.writeContract({
      address: chain.token,
      abi: chain.tokenAbi,
      functionName: 'mint',
      args: [chain.payer.address, 10_000_000n],
    });
    await chain.publicClient.waitForTransactionReceipt({ hash: mint });
  });

  it('a key still works and is charged as before; a keyless call without payment gets the 402 requirements', async () => {
    const k = await s.newKey();
    expect((await s.fetch(EVALUATE, { json: GO_BODY, key: k.secret })).status).toBe(200);
    expect(await charges(s)).toBe(1);
    const r = await s.fetch(EVALUATE, { json: GO_BODY });
    expect(r.status).toBe(402);
    const req = JSON.parse(Buffer.from(r.headers.get('payment-required')!, 'base64').toString()) as J;
    expect(req.accepts[0]).toMatchObject({ network: NETWORK, amount: PRICE.toString(), asset: chain.token, payTo: chain.payTo });
  });
});

describe('x402 on hop and lookup (our extension): past the hop limit, or without a key', { timeout: 120_000 }, () => {
  it('a key past its limit gets the x402 requirements in the hop-limit 402, then pays per hop: receipt with the payment, quota untouched', async () => {
    const k = await s.newKey('quota', 1);
    const fuse = (await (await s.fetch('/v1/fuses', { key: k.secret, json: {} })).json()) as J;
    expect(fuse.fuse_id ?? fuse.id).toBeTruthy();
    const fuseId = (fuse.fuse_id ?? fuse.id) as string;
    expect((await s.fetch('/v1/fuse/hop', { key: k.secret, json: { fuse_id: fuseId } })).status).toBe(200);

    const limited = await s.fetch('/v1/fuse/hop', { key: k.secret, json: { fuse_id: fuseId } });
    expect(limited.status).toBe(402);
    const lb = (await limited.json()) as J;
    expect(lb).toMatchObject({ code: 'hop_limit_exceeded', hop_limit: 1, x402_configured: true, x402Version: 1 });
    const req = JSON.parse(Buffer.from(limited.headers.get('payment-required')!, 'base64').toString()) as J;
    expect(req.resource.url).toBe(s.config.BASE_URL + '/v1/fuse/hop');
    expect(req.accepts[0]).toMatchObject({ amount: PRICE.toString(), network: NETWORK });

    const bal = await chain.balanceOf(chain.payer.address);
    const meter = await charges(s);
    const { pay } = payingFetch();
    const r = await pay(s.url + '/v1/fuse/hop', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${k.secret}` },
      body: JSON.stringify({ fuse_id: fuseId }),
    });
    const body = (await r.json()) as J;
    expect(r.status).toBe(200);
    expect(body).toMatchObject({ fuse_id: fuseId, ok: true, payment: { payer: chain.payer.address, settled: true } });
    expect(decodePaymentResponseHeader(r.headers.get('payment-response')!).success).toBe(true);
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
    expect(await charges(s)).toBe(meter);
    const me = (await (await s.fetch('/v1/me', { key: k.secret })).json()) as J;
    expect(me.usage.hops_used).toBe(1);
    const rc = (await (await s.fetch(`/v1/receipts/${body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(body.payment.transaction);

    // The lookup past the limit pays the same way and gets a receipt naming the payment.
    const lk = await pay(`${s.url}/v1/fuse/lookup?fuse_id=${fuseId}`, { headers: { authorization: `Bearer ${k.secret}` } });
    const lkb = (await lk.json()) as J;
    expect(lk.status).toBe(200);
    expect(lkb).toMatchObject({ fuse_id: fuseId, exists: true, payment: { settled: true } });
    expect(lkb.receipt_id).toMatch(/^rcpt_/);
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - 2n * PRICE);
  });

  it("without a key: 402 with the price of this hop, a payment hops a public drill fuse (a refusal pays its NAP); another key's fuse stays invisible (404, not charged)", async () => {
    const unpaid = await s.fetch('/v1/fuse/hop', { json: { fuse_id: 'fuse_drill_live' } });
    expect(unpaid.status).toBe(402);
    expect(JSON.parse(Buffer.from(unpaid.headers.get('payment-required')!, 'base64').toString()).accepts[0].amount).toBe(PRICE.toString());
    const refused = await s.fetch('/v1/fuse/hop', { json: { fuse_id: 'fuse_drill_dead' } });
    expect(JSON.parse(Buffer.from(refused.headers.get('payment-required')!, 'base64').toString()).accepts[0].amount).toBe(
      HOLD_PRICE.toString(),
    );
    const bal = await chain.balanceOf(chain.payer.address);
    const { pay } = payingFetch(HOLD_PRICE);
    const r = await pay(s.url + '/v1/fuse/hop', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ fuse_id: 'fuse_drill_dead', action: { kind: 'pay' } }),
    });
    const body = (await r.json()) as J;
    expect(r.status).toBe(200);
    // What the answer shows is what moved on chain: the NAP hold of a DENY, 0.50.
    expect(body).toMatchObject({
      state: 'DEAD',
      ok: false,
      verdict: false,
      charge: { sku: 'hold', amount_usd: '0.50', nap: true },
      payment: { settled: true, amount: HOLD_PRICE.toString() },
    });
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - HOLD_PRICE);

    const k = await s.newKey('owner');
    const owned = (await (await s.fetch('/v1/fuses', { key: k.secret, json: {} })).json()) as J;
    const hidden = await paidPost404(`/v1/fuse/hop`, { fuse_id: owned.fuse_id ?? owned.id });
    expect(hidden).toBe(404);
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - HOLD_PRICE);
  });
});

async function paidPost404(path: string, json: unknown): Promise<number> {
  const r = await s.fetch(path, { json, headers: { 'payment-signature': await signedPayment({ path }) } });
  return r.status;
}

describe('x402 discovery: every document agrees, from the running configuration', { timeout: 120_000 }, () => {
  it('configured: x402_configured true everywhere, the paid resources listed with the toll price', async () => {
    // The live catalogs still satisfy their published schemas.
    expect(x402Schema.safeParse(await (await s.fetch('/.well-known/x402')).json()).error).toBeUndefined();
    expect(x402BazaarSchema.safeParse(await (await s.fetch('/.well-known/x402-bazaar.json')).json()).error).toBeUndefined();
    expect(discoveryDocumentSchema.safeParse(await (await s.fetch('/.well-known/x402.json')).json()).error).toBeUndefined();
    for (const p of ['/.well-known/x402.json', '/.well-known/x402', '/.well-known/x402-bazaar.json', '/.well-known/prefinality.json']) {
      const b = (await (await s.fetch(p)).json()) as J;
      expect(b.x402_configured, p).toBe(true);
      const list = b.resources ?? b.listings;
      if (list) {
        expect(
          list.map((x: J) => x.resource),
          p,
        ).toEqual(expect.arrayContaining([EVALUATE, '/v1/fuse/hop', '/v1/fuse/lookup'].map((x) => s.config.BASE_URL + x)));
        const evaluate = list.find((x: J) => x.resource === s.config.BASE_URL + EVALUATE);
        expect(
          list.filter((x: J) => x !== evaluate).every((x: J) => x.extension === true),
          p,
        ).toBe(true);
        expect(evaluate.extension, p).toBeUndefined();
        expect(evaluate.price, p).toMatchObject({
          usd: '0.10',
          amount: PRICE.toString(),
          asset: chain.token,
          network: NETWORK,
          pay_to: chain.payTo,
        });
      }
    }
  });

  it('not configured: false everywhere, nothing listed, a presented payment is answered 401', async () => {
    const plain = await startTestServer();
    try {
      for (const p of ['/.well-known/x402.json', '/.well-known/x402', '/.well-known/x402-bazaar.json', '/.well-known/prefinality.json']) {
        const b = (await (await plain.fetch(p)).json()) as J;
        expect(b.x402_configured, p).toBe(false);
        expect(b.resources ?? b.listings ?? [], p).toEqual([]);
      }
      const r = await plain.fetch(EVALUATE, { json: GO_BODY, headers: { 'payment-signature': await signedPayment({ srv: plain }) } });
      expect(r.status).toBe(401);
      expect(((await r.json()) as J).code).toBe('x402_not_configured');
    } finally {
      await plain.stop();
    }
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('x402 failure is safe', { timeout: 120_000 }, () => {
  it('facilitator unreachable: 503 with retry-after, nothing recorded, nothing moved', async () => {
    const down = await startTestServer(x402Env(`http://127.0.0.1:${await closedPort()}`));
    try {
      const bal = await chain.balanceOf(chain.payer.address);
      const { r, body } = await paidPost(down, await signedPayment({ srv: down }));
      expect(r.status).toBe(503);
      expect(body.code).toBe('x402_facilitator_unavailable');
      expect(r.headers.get('retry-after')).toBeTruthy();
      expect(await receipts(down)).toBe(0);
      expect(await count(down, 'SELECT COUNT(*) AS n FROM x402_payments')).toBe(0);
      expect(await chain.balanceOf(chain.payer.address)).toBe(bal);
    } finally {
      await down.stop();
    }
  });

  it('wrong facilitator credentials: 503 unavailable, nothing recorded; the credential never appears in a log line', async () => {
    const lines: string[] = [];
    const wrong = await startTestServer(x402Env(fac.url, { X402_FACILITATOR_AUTH_HEADER: 'Authorization: Bearer not-it' }));
    const log = wrong.ctx.log;
    wrong.ctx.log = (level, msg, fields) => {
      lines.push(JSON.stringify({ level, msg, fields }));
      log(level, msg, fields);
    };
    try {
      const { r, body } = await paidPost(wrong, await signedPayment({ srv: wrong }));
      expect(r.status).toBe(503);
      expect(body.code).toBe('x402_facilitator_unavailable');
      expect(await count(wrong, 'SELECT COUNT(*) AS n FROM x402_payments')).toBe(0);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('\n')).not.toContain('not-it');
    } finally {
      await wrong.stop();
    }
  });

  it('settle too slow: 503 pending, no GO given; after a restart the reconciliation job settles it and commits the act', async () => {
    // The first process gives up on settle after 4 s and reconciles only hour-old payments; the one
    // started after it waits as long as a settle takes and reconciles every second, all of them.
    const slow = await startTestServer(x402Env(fac.url, { X402_FACILITATOR_TIMEOUT_MS: '4000', X402_RECONCILE_AFTER_SECONDS: '3600' }));
    let restarted: TestServer | undefined;
    try {
      const header = await signedPayment({ srv: slow });
      const bal = await chain.balanceOf(chain.payer.address);
      fac.mode = 'hang-settle';
      const { r, body } = await paidPost(slow, header);
      fac.mode = 'ok';
      expect(r.status).toBe(503);
      expect(body.code).toBe('x402_settlement_pending');
      expect(await receipts(slow)).toBe(0);
      expect(await count(slow, "SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settling'")).toBe(1);
      // While it is settling, the same payment is refused.
      expect((await paidPost(slow, header)).body).toMatchObject({ code: 'x402_payment_used', payment_state: 'settling' });

      // The process goes away with the payment still settling, and a new one starts on the same ledger.
      await slow.close();
      restarted = await startTestServer(x402Env(fac.url, { X402_RECONCILE_AFTER_SECONDS: '0' }), slow.dir);
      const settledBy = restarted;
      await untilCommitted(
        settledBy.ctx.ledger,
        async () => (await count(settledBy, "SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'settled'")) > 0,
      );
      expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
      expect(await receipts(restarted)).toBe(1);
      const again = await paidPost(restarted, header);
      expect(again.body).toMatchObject({ code: 'x402_payment_used', payment_state: 'settled' });
      const rc = (await (
        await restarted.fetch(`/v1/receipts/${again.body.receipt_id}`, { headers: { accept: 'application/json' } })
      ).json()) as J;
      expect(JSON.stringify(rc)).toMatch(/"reconciled":true/);
      expect(JSON.stringify(rc)).toMatch(/"decision":"GO"/);

      // Nothing is left to do on a second run.
      expect(await reconcileX402Payments(restarted.ctx, facilitatorOf(restarted.ctx)!, 0)).toEqual({
        settled: [],
        failed: [],
        unknown: [],
      });
    } finally {
      fac.mode = 'ok';
      await (restarted ?? slow).stop();
    }
  });

  it('a pending payment that can no longer settle (the chain passed its validBefore) is reconciled as failed: no money, no act', async () => {
    // Reconciliation here runs only when the test says (hour-old rows otherwise), so nothing races it.
    const later = await startTestServer(x402Env(fac.url, { X402_FACILITATOR_TIMEOUT_MS: '4000', X402_RECONCILE_AFTER_SECONDS: '3600' }));
    try {
      const soon = await signedPayment({ srv: later });
      const bal = await chain.balanceOf(chain.payer.address);
      fac.mode = 'hang-settle';
      expect((await paidPost(later, soon)).body.code).toBe('x402_settlement_pending');
      fac.mode = 'ok';
      const snapshot = await chain.provider.request({ method: 'evm_snapshot' });
      try {
        await chain.provider.request({ method: 'evm_increaseTime', params: [3600] });
        await chain.provider.request({ method: 'evm_mine' });
        // Reconciled with a patient facilitator client: the request's 4 s would make this outcome depend on load.
        const patient = httpFacilitator({ ...x402SetupOf(later.config)!, timeoutMs: 30_000 });
        expect(await reconcileX402Payments(later.ctx, patient, 0)).toMatchObject({
          failed: [expect.any(String)],
          settled: [],
          unknown: [],
        });
      } finally {
        // The chain's clock is put back for the tests that follow.
        await chain.provider.request({ method: 'evm_revert', params: [snapshot] });
      }
      expect(await receipts(later)).toBe(0);
      expect(await chain.balanceOf(chain.payer.address)).toBe(bal);
      expect(await count(later, "SELECT COUNT(*) AS n FROM x402_payments WHERE state = 'failed'")).toBe(1);
    } finally {
      fac.mode = 'ok';
      await later.stop();
    }
  });
});

describe('the example agent script (examples/x402-pay.ts)', { timeout: 120_000 }, () => {
  it('pays for an evaluate and prints the GO with its settlement', async () => {
    const bal = await chain.balanceOf(chain.payer.address);
    // The example talks JSON-RPC to no chain: signing is offline; the facilitator settles.
    const { stdout } = await run(process.execPath, ['examples/x402-pay.ts'], {
      env: { ...process.env, GATE_URL: s.url, PAYER_PRIVATE_KEY: chain.payerKey },
      timeout: 60_000,
    });
    const out = JSON.parse(stdout) as J;
    expect(out).toMatchObject({ status: 200, decision: 'GO', settlement: { success: true, network: NETWORK } });
    expect(await chain.balanceOf(chain.payer.address)).toBe(bal - PRICE);
    expect(readFileSync('examples/x402-pay.ts', 'utf8')).toContain('@x402/fetch');
  });
});

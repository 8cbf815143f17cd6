/**
 * The price asked is the price taken, through x402 on a real chain: the
 * official client pays what each 402 asks, the official facilitator (@x402/evm,
 * scheme exact) settles it with a real transferWithAuthorization, and what
 * moved on chain is what the answer's charge shows. A request whose price
 * depends on it (a pre-clearance's tier, a refusal's NAP, a welded act's seal,
 * an ORN SHARP's agents and events, the RTP gate's pass or refusal) is asked
 * the price of that very request.
 */
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactEvmScheme, toClientEvmSigner, authorizationTypes } from '@x402/evm';
import { getAddress, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAIN_ID, NETWORK, startTestChain, type TestChain } from './support/evm-chain.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startTestFacilitator, type TestFacilitator } from './support/x402-facilitator.ts';
import { chargesOf } from './support/ledger-reads.ts';

type J = Record<string, any>;

let chain: TestChain;
let fac: TestFacilitator;
let s: TestServer;

beforeAll(async () => {
  chain = await startTestChain({ tokenName: 'USD Coin', tokenVersion: '2', funded: 1_000_000_000n });
  fac = await startTestFacilitator(chain);
  s = await startTestServer({
    X402_PAY_TO: chain.payTo,
    X402_NETWORK: NETWORK,
    X402_ASSET: chain.token,
    X402_ASSET_NAME: 'USD Coin',
    X402_ASSET_VERSION: '2',
    X402_FACILITATOR_URL: fac.url,
    X402_FACILITATOR_TIMEOUT_MS: '30000',
  });
}, 120_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
  await chain?.close();
});

/** The official client, paying at most `cap` atomic units per call. */
function officialClient(cap: bigint) {
  const client = x402Client.fromConfig({
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(toClientEvmSigner(chain.payer)) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: chain.token, maxAmountPerPayment: cap.toString() }] },
  });
  const pay = wrapFetchWithPayment(fetch, client);
  return async (path: string, body: unknown) => {
    const r = await pay(s.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { r, body: (await r.json()) as J };
  };
}

/** The amount (atomic units) the 402 of a request without a payment asks, or its status when it asks none. */
async function asked(path: string, body: unknown): Promise<string | number> {
  const r = await s.fetch(path, { json: body });
  await r.arrayBuffer();
  if (r.status !== 402) return r.status;
  return decodePaymentRequiredHeader(r.headers.get('payment-required')!).accepts[0]!.amount;
}

/** A v2 payment of `value` for `path` signed by the payer (viem EIP-712), stating `accepted` (default `value`) as the amount it accepted. */
async function signedFor(path: string, value: bigint, accepted_ = value): Promise<string> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const accepted: PaymentRequirements = {
    scheme: 'exact',
    network: NETWORK,
    amount: accepted_.toString(),
    asset: chain.token,
    payTo: chain.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  };
  const authorization = {
    from: chain.payer.address,
    to: getAddress(chain.payTo),
    value,
    validAfter: now - 600n,
    validBefore: now + 60n,
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await chain.payer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: CHAIN_ID, verifyingContract: getAddress(chain.token) },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const payload: PaymentPayload = {
    x402Version: 2,
    resource: { url: s.config.BASE_URL + path, description: 'paid call', mimeType: 'application/json' },
    accepted,
    payload: {
      signature,
      authorization: {
        ...authorization,
        value: value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
    },
  };
  return encodePaymentSignatureHeader(payload);
}

const balance = () => chain.balanceOf(chain.payer.address);
const CLEAR_BEFORE = '/api/v1/clear/before';
const pre = (tier: string, fuse_id = 'fuse_drill_live') => ({ tier, fuse_id, action: { kind: 'pay' }, exposure_usd: '2500.00' });

describe('x402: each request is asked its own price, and pays exactly that', { timeout: 120_000 }, () => {
  it('clear/before asks the price of the tier in its body (a refusal its NAP); a bad body is refused before any price', async () => {
    expect(await asked(CLEAR_BEFORE, pre('act'))).toBe('10000000');
    expect(await asked(CLEAR_BEFORE, pre('wire'))).toBe('50000000');
    expect(await asked(CLEAR_BEFORE, pre('contract'))).toBe('150000000');
    expect(await asked(CLEAR_BEFORE, pre('contract', 'fuse_drill_dead'))).toBe('500000');
    expect(await asked(CLEAR_BEFORE, { tier: 'platinum', fuse_id: 'fuse_drill_live', action: { kind: 'pay' } })).toBe(400);
  });

  it('a contract pre-clearance cannot be bought at the price of an act: refused, nothing moved, nothing recorded', async () => {
    const before = await balance();
    const settles = fac.calls.settle;
    const r = await s.fetch(CLEAR_BEFORE, {
      json: pre('contract'),
      headers: { 'payment-signature': await signedFor(CLEAR_BEFORE, 10_000_000n) },
    });
    const body = (await r.json()) as J;
    expect(r.status).toBe(402);
    expect(body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['amount'] });
    expect(decodePaymentRequiredHeader(r.headers.get('payment-required')!).accepts[0]!.amount).toBe('150000000');
    expect(fac.calls.settle).toBe(settles);
    expect(await balance()).toBe(before);
    expect(Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM x402_payments')).rows[0]!.n)).toBe(0);
  });

  it('the official client pays a contract pre-clearance 150.00: what moved on chain is the charge the answer shows', async () => {
    const before = await balance();
    const { r, body } = await officialClient(150_000_000n)(CLEAR_BEFORE, pre('contract'));
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({
      tier: 'contract',
      decision: 'PERMIT',
      charge: { sku: 'clear_before_contract', amount_usd: '150.00', nap: false },
      payment: { amount: '150000000', settled: true },
    });
    expect(await balance()).toBe(before - 150_000_000n);
  });

  it('a refused pre-clearance pays its NAP, 0.50, whatever the tier', async () => {
    const before = await balance();
    const { r, body } = await officialClient(500_000n)(CLEAR_BEFORE, pre('contract', 'fuse_drill_dead'));
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({
      decision: 'DENY',
      charge: { sku: 'hold', amount_usd: '0.50', nap: true },
      payment: { amount: '500000', settled: true },
    });
    expect(await balance()).toBe(before - 500_000n);
  });

  it('a welded act that acts pays the hop and the seal (0.15), and shows both lines', async () => {
    expect(await asked('/v1/act', { fuse_id: 'fuse_drill_live', action: { kind: 'pay' } })).toBe('150000');
    const before = await balance();
    const { r, body } = await officialClient(150_000n)('/v1/act', { fuse_id: 'fuse_drill_live', action: { kind: 'pay' } });
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body.charges).toEqual([
      { sku: 'execute_gate', amount_usd: '0.10', nap: false },
      { sku: 'seal', amount_usd: '0.05', nap: false },
    ]);
    expect(body.payment).toMatchObject({ amount: '150000', settled: true });
    expect(await balance()).toBe(before - 150_000n);
  });

  it('an ORN SHARP slice is priced from its request (agents x events x 1.20) and takes x402', async () => {
    const slice = { graph_id: 'swarm-x402', agents_in_graph: 5, events: 3 };
    expect(await asked('/api/v1/orn/sharp', slice)).toBe('18000000');
    const before = await balance();
    const { r, body } = await officialClient(18_000_000n)('/api/v1/orn/sharp', slice);
    expect(r.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ charge: { sku: 'sharp', amount_usd: '18.00' }, payment: { amount: '18000000', settled: true } });
    expect(await balance()).toBe(before - 18_000_000n);
  });

  it('the RTP gate takes x402: a payer gates the GO receipt it paid for (0.03); presented again, the refusal is not settled (like evaluate, only a pass is paid)', async () => {
    const transfer = {
      amount: '125.00',
      currency: 'USD',
      account_number: '000123456789',
      routing_number: '021000021',
      counterparty: 'ACME Supplies LLC',
    };
    const go = await officialClient(100_000n)('/v1/prefinality/evaluate', { rail: 'rtp', transfer });
    expect(go.body).toMatchObject({ decision: 'GO' });
    const gate = { receipt: go.body.receipt_jwt, payment_order: transfer };
    expect(await asked('/v1/prefinality/rtp/gate', gate)).toBe('30000');
    const before = await balance();
    const pass = await officialClient(30_000n)('/v1/prefinality/rtp/gate', gate);
    expect(pass.r.status, JSON.stringify(pass.body)).toBe(200);
    expect(pass.body).toMatchObject({
      pass: true,
      charge: { sku: 'verify_attestation', amount_usd: '0.03' },
      payment: { amount: '30000', settled: true },
    });
    const again = await officialClient(30_000n)('/v1/prefinality/rtp/gate', gate);
    expect(again.r.status).toBe(403);
    expect(again.body).toMatchObject({ pass: false, reasons: [{ code: 'receipt_used' }], charge: null, payment: { settled: false } });
    expect(await balance()).toBe(before - 30_000n);
  });

  it('an authorization above the price is refused by the gate, as the official facilitator refuses it: nothing moves', async () => {
    const path = '/v1/classify';
    // It says it accepts the price (0.05) and authorizes 0.06.
    const over = await signedFor(path, 60_000n, 50_000n);
    // The official exact scheme verifies an authorization of exactly the amount required, no more.
    const payload = JSON.parse(Buffer.from(over, 'base64').toString()) as PaymentPayload;
    expect(await fac.facilitator.verify(payload, payload.accepted)).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_evm_payload_authorization_value_mismatch',
    });
    const before = await balance();
    const verifies = fac.calls.verify;
    const r = await s.fetch(path, { json: { text: 'wire 5,000 USD' }, headers: { 'payment-signature': over } });
    expect(r.status).toBe(402);
    // Refused by the gate's own terms, before any facilitator is asked.
    expect(await r.json()).toMatchObject({ code: 'x402_payment_mismatch', fields: ['value'] });
    expect(fac.calls.verify).toBe(verifies);
    expect(await balance()).toBe(before);
  });

  it('nothing paid with x402 is metered to any key', async () => {
    expect(await chargesOf(s.ctx.ledger.read)).toHaveLength(0);
  });
});

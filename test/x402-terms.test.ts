/**
 * The gate checks an x402 payment's terms itself. The facilitator here
 * approves every payment and "settles" anything it is sent (a real HTTP
 * server speaking the facilitator API), so whatever is refused below is
 * refused by the gate alone: a signed EIP-712 authorization (viem, a local
 * account) with one term wrong at a time, each refused with a 402 naming
 * that term, nothing recorded, charged or sent to the facilitator.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { getAddress, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf, receiptCount } from './support/ledger-reads.ts';

type J = Record<string, any>;

const NETWORK = 'eip155:84532';
const CHAIN_ID = 84532;
const TOKEN = getAddress('0x036cbd53842c5426634e7929541ec2318f3dcf7e');
const PAY_TO = getAddress('0x209693bc6afc0c5328ba36faf03c514ef312287c');
const PRICE = 100_000n;
const EVALUATE = '/v1/prefinality/evaluate';
const GO_BODY = { rail: 'x402', transfer: { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' } };

const payer = privateKeyToAccount(generatePrivateKey());
const stranger = privateKeyToAccount(generatePrivateKey());

let s: TestServer;
let fac: Server;
const calls = { verify: 0, settle: 0 };

/** A facilitator that approves everything. */
async function approveAll(): Promise<string> {
  fac = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as J;
      const from = body.paymentPayload?.payload?.authorization?.from ?? '0x0000000000000000000000000000000000000001';
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/verify') {
        calls.verify++;
        return res.end(JSON.stringify({ isValid: true, payer: from }));
      }
      if (req.url === '/settle') {
        calls.settle++;
        return res.end(JSON.stringify({ success: true, payer: from, network: NETWORK, transaction: toHex(crypto.getRandomValues(new Uint8Array(32))) }));
      }
      res.end(JSON.stringify({ kinds: [] }));
    });
  });
  await new Promise<void>((r) => fac.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(fac.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const url = await approveAll();
  s = await startTestServer({
    X402_PAY_TO: PAY_TO,
    X402_NETWORK: NETWORK,
    X402_ASSET: TOKEN,
    X402_ASSET_NAME: 'USDC',
    X402_ASSET_VERSION: '2',
    X402_FACILITATOR_URL: url,
  });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await new Promise<void>((r) => (fac ? fac.close(() => r()) : r()));
});

interface Over {
  value?: bigint;
  to?: `0x${string}`;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: `0x${string}`;
  /** The nonce as written in the payload (the signature covers `nonce`). */
  writtenNonce?: string;
  resource?: string | null;
  /** What the payload says it accepted. */
  accepted?: Partial<PaymentRequirements>;
  /** The EIP-712 domain signed. */
  domain?: { chainId?: number; verifyingContract?: `0x${string}`; name?: string };
  signer?: typeof payer;
}

async function payment(o: Over = {}): Promise<string> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const signer = o.signer ?? payer;
  const message = {
    from: payer.address,
    to: o.to ?? PAY_TO,
    value: o.value ?? PRICE,
    validAfter: o.validAfter ?? now - 600n,
    validBefore: o.validBefore ?? now + 60n,
    nonce: o.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await signer.signTypedData({
    domain: { name: o.domain?.name ?? 'USDC', version: '2', chainId: o.domain?.chainId ?? CHAIN_ID, verifyingContract: o.domain?.verifyingContract ?? TOKEN },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  const accepted: PaymentRequirements = {
    scheme: 'exact',
    network: NETWORK,
    amount: PRICE.toString(),
    asset: TOKEN,
    payTo: PAY_TO,
    maxTimeoutSeconds: 60,
    extra: { name: 'USDC', version: '2' },
    ...o.accepted,
  } as PaymentRequirements;
  const payload = {
    x402Version: 2,
    ...(o.resource === null ? {} : { resource: { url: o.resource ?? s.config.BASE_URL + EVALUATE, description: 'evaluate', mimeType: 'application/json' } }),
    accepted,
    payload: {
      signature,
      authorization: {
        ...message,
        nonce: o.writtenNonce ?? message.nonce,
        value: message.value.toString(),
        validAfter: message.validAfter.toString(),
        validBefore: message.validBefore.toString(),
      },
    },
  } as PaymentPayload;
  return encodePaymentSignatureHeader(payload);
}

const count = async (sql: string) => Number((await s.ctx.ledger.read.execute(sql)).rows[0]!.n);
const ledgerCounts = async () => ({
  receipts: await receiptCount(s.ctx.ledger.read),
  meter: (await chargesOf(s.ctx.ledger.read)).length,
  payments: await count('SELECT COUNT(*) AS n FROM x402_payments'),
});

async function pay(header: string) {
  const r = await s.fetch(EVALUATE, { json: GO_BODY, headers: { 'payment-signature': header } });
  return { r, body: (await r.json()) as J };
}

describe('x402 terms: the gate refuses what an approve-everything facilitator would take', { timeout: 60_000 }, () => {
  const now = () => BigInt(Math.floor(Date.now() / 1000));
  const other = getAddress('0x000000000000000000000000000000000000dead');
  const cases: Array<[string, () => Promise<string>, string, string[]]> = [
    ['a value of 1 (the header says the full amount)', () => payment({ value: 1n }), 'x402_payment_mismatch', ['value']],
    ['a value one unit short', () => payment({ value: PRICE - 1n }), 'x402_payment_mismatch', ['value']],
    ['another recipient', () => payment({ to: other }), 'x402_payment_mismatch', ['to']],
    ['another resource', () => payment({ resource: 'https://elsewhere.example/v1/prefinality/evaluate' }), 'x402_payment_mismatch', ['resource']],
    ['no resource named', () => payment({ resource: null }), 'x402_payment_mismatch', ['resource']],
    ['not valid yet', () => payment({ validAfter: now() + 120n }), 'x402_payment_mismatch', ['valid_after']],
    ['expired', () => payment({ validBefore: now() - 1n }), 'x402_payment_mismatch', ['valid_before']],
    ['expiring before a settlement can land', () => payment({ validBefore: now() + 2n }), 'x402_payment_mismatch', ['valid_before']],
    ['a nonce written as 31 bytes', () => payment({ writtenNonce: `0x${'ab'.repeat(31)}` }), 'x402_payment_mismatch', ['nonce']],
    ['a nonce written as 33 bytes (a leading zero byte added)', () => payment({ nonce: `0x${'ab'.repeat(32)}`, writtenNonce: `0x00${'ab'.repeat(32)}` }), 'x402_payment_mismatch', ['nonce']],
    ['another asset in what it accepted', () => payment({ accepted: { asset: other } }), 'x402_payment_mismatch', ['asset']],
    ['another network in what it accepted', () => payment({ accepted: { network: 'eip155:8453' } }), 'x402_payment_mismatch', ['network']],
    ['signed for another token', () => payment({ domain: { verifyingContract: other } }), 'x402_signature_invalid', ['signature']],
    ['signed for another chain', () => payment({ domain: { chainId: 8453 } }), 'x402_signature_invalid', ['signature']],
    ['signed under another token name', () => payment({ domain: { name: 'USD Coin' } }), 'x402_signature_invalid', ['signature']],
    ['signed by someone else', () => payment({ signer: stranger }), 'x402_signature_invalid', ['signature']],
  ];
  for (const [what, make, code, fields] of cases) {
    it(`refuses ${what}: 402 ${code} naming ${fields.join(', ')}; nothing recorded, charged or asked`, async () => {
      const before = await ledgerCounts();
      const asked = { ...calls };
      const { r, body } = await pay(await make());
      expect(r.status).toBe(402);
      expect(body).toMatchObject({ code, fields });
      expect(body.detail).toEqual(expect.any(String));
      expect(r.headers.get('payment-required')).toBeTruthy();
      expect(await ledgerCounts()).toEqual(before);
      expect(calls).toEqual(asked);
    });
  }

  it('several wrong terms are named together', async () => {
    const { r, body } = await pay(await payment({ value: 1n, to: other, resource: 'https://elsewhere.example/x' }));
    expect(r.status).toBe(402);
    expect(body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['value', 'to', 'resource'] });
  });

  it('a right payment acts and settles once; the answer and the receipt state the amount the authorization moves', async () => {
    const before = await ledgerCounts();
    const asked = { ...calls };
    const { r, body } = await pay(await payment({ value: PRICE + 5n }));
    expect(r.status).toBe(200);
    expect(body).toMatchObject({ decision: 'GO', payment: { payer: payer.address, amount: (PRICE + 5n).toString(), settled: true } });
    expect(decodePaymentResponseHeader(r.headers.get('payment-response')!).success).toBe(true);
    expect(calls).toEqual({ verify: asked.verify + 1, settle: asked.settle + 1 });
    const rc = (await (await s.fetch(`/v1/receipts/${body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(`"amount":"${(PRICE + 5n).toString()}"`);
    expect(await ledgerCounts()).toMatchObject({ receipts: before.receipts + 1, meter: before.meter, payments: before.payments + 1 });
  });

  it('a nonce is one payment however it is written: with a leading zero byte dropped it is refused, in upper case it is the same payment', async () => {
    const nonce = `0x00${'7f'.repeat(31)}` as const;
    const paid = await pay(await payment({ nonce }));
    expect(paid.r.status).toBe(200);
    const settled = calls.settle;
    const short = await pay(await payment({ nonce, writtenNonce: `0x${'7f'.repeat(31)}` }));
    expect(short.r.status).toBe(402);
    expect(short.body).toMatchObject({ code: 'x402_payment_mismatch', fields: ['nonce'] });
    const upper = await pay(await payment({ nonce, writtenNonce: `0x00${'7F'.repeat(31)}` }));
    expect(upper.r.status).toBe(402);
    expect(upper.body).toMatchObject({ code: 'x402_payment_used', payment_state: 'settled', receipt_id: paid.body.receipt_id });
    expect(calls.settle).toBe(settled);
  });
});

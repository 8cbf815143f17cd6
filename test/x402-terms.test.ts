/**
 * The gate checks an x402 payment's terms itself. The facilitator here
 * approves every payment and "settles" anything it is sent (a real HTTP
 * server speaking the facilitator API), so whatever is refused below is
 * refused by the gate alone: a signed EIP-712 authorization (viem, a local
 * account) with one term wrong at a time, each refused with a 402 naming
 * that term, nothing recorded, charged or sent to the facilitator.
 */
import { decodePaymentResponseHeader } from '@x402/core/http';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf, receiptCount } from './support/ledger-reads.ts';
import { approveAllEnv, newPayer, signPayment, startApproveAll, type ApproveAll, type PaymentTerms } from './support/x402-approve-all.ts';

type J = Record<string, any>;

const PRICE = 100_000n;
const EVALUATE = '/v1/prefinality/evaluate';
const GO_BODY = {
  rail: 'x402',
  transfer: { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' },
};

const payer = newPayer();
const stranger = newPayer();

let s: TestServer;
let fac: ApproveAll;
let calls: ApproveAll['calls'];

beforeAll(async () => {
  fac = await startApproveAll();
  calls = fac.calls;
  s = await startTestServer(approveAllEnv(fac.url));
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
});

type Over = Omit<Partial<PaymentTerms>, 'resource'> & { resource?: string | null };
const payment = (o: Over = {}) =>
  signPayment({ payer, price: PRICE, ...o, resource: o.resource === undefined ? s.config.BASE_URL + EVALUATE : o.resource });

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
    // Scheme exact: the official facilitators refuse any other value too; settling more than the act costs would take more than its price.
    [
      'a value one unit above the price (the header says the price)',
      () => payment({ value: PRICE + 1n }),
      'x402_payment_mismatch',
      ['value'],
    ],
    [
      'a value above the price, stated as the amount accepted too',
      () => payment({ price: PRICE + 5n }),
      'x402_payment_mismatch',
      ['amount'],
    ],
    ['another recipient', () => payment({ to: other }), 'x402_payment_mismatch', ['to']],
    [
      'another resource',
      () => payment({ resource: 'https://elsewhere.example/v1/prefinality/evaluate' }),
      'x402_payment_mismatch',
      ['resource'],
    ],
    ['no resource named', () => payment({ resource: null }), 'x402_payment_mismatch', ['resource']],
    ['not valid yet', () => payment({ validAfter: now() + 120n }), 'x402_payment_mismatch', ['valid_after']],
    ['expired', () => payment({ validBefore: now() - 1n }), 'x402_payment_mismatch', ['valid_before']],
    ['expiring before a settlement can land', () => payment({ validBefore: now() + 2n }), 'x402_payment_mismatch', ['valid_before']],
    ['a nonce written as 31 bytes', () => payment({ writtenNonce: `0x${'ab'.repeat(31)}` }), 'x402_payment_mismatch', ['nonce']],
    [
      'a nonce written as 33 bytes (a leading zero byte added)',
      () => payment({ nonce: `0x${'ab'.repeat(32)}`, writtenNonce: `0x00${'ab'.repeat(32)}` }),
      'x402_payment_mismatch',
      ['nonce'],
    ],
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

  it('a right payment (exactly the price) acts and settles once; the answer and the receipt state the amount it moves and the line it paid', async () => {
    const before = await ledgerCounts();
    const asked = { ...calls };
    const { r, body } = await pay(await payment());
    expect(r.status).toBe(200);
    expect(body).toMatchObject({
      decision: 'GO',
      charge: { sku: 'execute_gate', amount_usd: '0.10' },
      payment: { payer: payer.address, amount: PRICE.toString(), settled: true },
    });
    expect(decodePaymentResponseHeader(r.headers.get('payment-response')!).success).toBe(true);
    expect(calls).toEqual({ verify: asked.verify + 1, settle: asked.settle + 1 });
    const rc = (await (await s.fetch(`/v1/receipts/${body.receipt_id}`, { headers: { accept: 'application/json' } })).json()) as J;
    expect(JSON.stringify(rc)).toContain(`"amount":"${PRICE.toString()}"`);
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

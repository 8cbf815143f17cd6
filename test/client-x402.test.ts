/**
 * The typed client pays with x402 when given a payer (a viem account): a call
 * answered 402 is signed from the 402's own requirements and sent again once;
 * the answer comes back with the settlement decoded. Real parts: the gate on
 * an ephemeral port with x402 configured, the facilitator the x402 tests use
 * on its own port (it approves what the gate sends it; the gate checks the
 * signed terms itself, so a wrong signature is refused by the gate).
 */
import { authorizationTypes } from '@x402/evm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTHORIZATION_TYPES } from '../src/client-x402.ts';
import { FuseGateClient, FuseGateError } from '../src/client.ts';
import { allReceipts } from './support/ledger-reads.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { approveAllEnv, newPayer, startApproveAll, type ApproveAll } from './support/x402-approve-all.ts';

type J = Record<string, any>;

let s: TestServer;
let fac: ApproveAll;
const payer = newPayer();
const GO = { rail: 'x402', transfer: { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' } };
const NO_GO = { rail: 'x402', transfer: { amount: '0.25', currency: 'USDC' } };

beforeAll(async () => {
  fac = await startApproveAll();
  s = await startTestServer(approveAllEnv(fac.url));
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await fac?.close();
});

/** A client whose requests are counted, with the payment headers it sent. */
function counting(opts: { payer?: typeof payer; apiKey?: string }) {
  const sent: Array<string | null> = [];
  const f: typeof fetch = async (input, init) => {
    sent.push(new Headers(init?.headers).get('payment-signature'));
    return fetch(input, init);
  };
  return { gate: new FuseGateClient({ baseUrl: s.url, fetch: f, ...opts }), sent };
}

describe('the typed client pays with x402', { timeout: 60_000 }, () => {
  it('signs the EIP-3009 authorization with the official types', () => {
    expect(AUTHORIZATION_TYPES).toEqual(authorizationTypes);
  });

  it('a keyless call answered 402 is paid once from its requirements: the answer, its receipt and the decoded settlement name the payment', async () => {
    const settles = fac.calls.settle;
    const { gate, sent } = counting({ payer });
    const r = await gate.call('classify', { text: 'wire 5,000 USD to the supplier' });
    expect(r.status).toBe(200);
    expect(sent).toHaveLength(2);
    expect(sent[0]).toBeNull();
    expect(sent[1]).toBeTruthy();
    expect(r.payment).toMatchObject({ protocol: 'x402', payer: payer.address, amount: '50000', settled: true });
    expect(r.paymentResponse).toMatchObject({ success: true });
    expect(r.paymentResponse!.transaction).toBe((r.payment as J).transaction);
    expect(fac.calls.settle).toBe(settles + 1);
    const receipt = (await allReceipts(s.ctx.ledger.read)).find((x) => x.receipt_id === r.receipt_id);
    expect(JSON.stringify(receipt)).toContain(payer.address);
  });

  it('a named helper pays too: a GO evaluate is settled, a NO_GO is returned unpaid', async () => {
    const { gate } = counting({ payer });
    const go = await gate.evaluate(GO);
    expect(go).toMatchObject({ status: 200, decision: 'GO', payment: { settled: true, payer: payer.address } });
    expect(go.paymentResponse?.success).toBe(true);
    const settles = fac.calls.settle;
    const no = await gate.evaluate(NO_GO);
    expect(no).toMatchObject({ status: 403, decision: 'NO_GO', payment: { settled: false } });
    expect(no.paymentResponse).toBeUndefined();
    expect(fac.calls.settle).toBe(settles);
  });

  it('a key past its hop limit pays for the hop; the key is not charged, the answer shows the line the payment paid', async () => {
    const k = await s.newKey('client-quota', 1, 'agent');
    const op = await s.newKey('client-op', 1000, 'operator', k.accountId);
    const fuse = (await new FuseGateClient({ baseUrl: s.url, apiKey: op.secret }).createFuse()) as J;
    const { gate, sent } = counting({ payer, apiKey: k.secret });
    expect((await gate.hop({ fuse_id: fuse.fuse_id })).paymentResponse).toBeUndefined();
    const paid = await gate.hop({ fuse_id: fuse.fuse_id, action: { kind: 'pay' } });
    expect(paid).toMatchObject({
      status: 200,
      verdict: true,
      charge: { sku: 'execute_gate', amount_usd: '0.10' },
      payment: { settled: true, amount: '100000' },
    });
    expect(paid.paymentResponse?.success).toBe(true);
    expect(sent.filter(Boolean)).toHaveLength(1);
  });

  it('without a payer a 402 is a typed error carrying the requirements', async () => {
    const err = await new FuseGateClient({ baseUrl: s.url }).call('classify', { text: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FuseGateError);
    expect(err).toMatchObject({
      status: 402,
      problem: { code: 'x402_payment_required', payment_required: { x402Version: 2, accepts: [{ scheme: 'exact', amount: '50000' }] } },
    });
  });

  it('a payment the gate refuses is thrown with its code, and not tried again', async () => {
    // Signs as another account than the one it names: the gate's own terms check refuses the signature.
    const other = newPayer();
    const forger = { address: payer.address, signTypedData: other.signTypedData.bind(other) } as typeof payer;
    const { gate, sent } = counting({ payer: forger });
    const err = await gate.call('classify', { text: 'x' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 402, problem: { code: 'x402_signature_invalid' } });
    expect(sent).toHaveLength(2);
  });

  it('bad input is refused with its problem after the payment is offered, and nothing is settled', async () => {
    const settles = fac.calls.settle;
    const { gate } = counting({ payer });
    const err = await gate.call('classify', {} as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FuseGateError);
    expect((err as FuseGateError).status).toBe(400);
    expect(fac.calls.settle).toBe(settles);
  });
});

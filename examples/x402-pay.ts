/**
 * How an agent with a wallet and no API key pays Fuse Gate per call (x402).
 *
 *   GATE_URL=http://localhost:4321 PAYER_PRIVATE_KEY=0x… node examples/x402-pay.ts
 *
 * The official x402 client (@x402/fetch + @x402/evm) sees the 402, signs an
 * EIP-3009 transferWithAuthorization for the price in the PAYMENT-REQUIRED
 * header (EIP-712, offline: no gas, no RPC), and sends the request again with
 * PAYMENT-SIGNATURE. The gate verifies, decides, settles a GO and answers with
 * the decision and a PAYMENT-RESPONSE header naming the on-chain transaction.
 * Prints one JSON line: status, decision, receipt and settlement.
 */
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, type Network } from '@x402/fetch';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';

const gate = process.env.GATE_URL ?? 'http://localhost:4321';
const key = process.env.PAYER_PRIVATE_KEY as `0x${string}` | undefined;
if (!key) throw new Error('set PAYER_PRIVATE_KEY to the hex private key of a wallet holding the asset');

// What the gate charges, from its discovery document; the client refuses to pay more than this
// (or MAX_ATOMIC_AMOUNT) and only in this asset.
const doc = (await (await fetch(`${gate}/.well-known/x402.json`)).json()) as {
  x402_configured: boolean;
  resources: Array<{ resource: string; price: { amount: string; asset: string; network: Network } }>;
};
const evaluate = doc.resources.find((r) => r.resource.endsWith('/v1/prefinality/evaluate'));
if (!doc.x402_configured || !evaluate) throw new Error(`${gate} takes no x402 payment for evaluate`);
const { asset, network, amount } = evaluate.price;

const client = x402Client.fromConfig({
  schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(key))) }],
  spendControls: { allowedAssets: [{ network, asset, maxAmountPerPayment: process.env.MAX_ATOMIC_AMOUNT ?? amount }] },
});
const pay = wrapFetchWithPayment(fetch, client);

const res = await pay(`${gate}/v1/prefinality/evaluate`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    rail: 'x402',
    transfer: { amount: '0.25', currency: 'USDC', counterparty: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' },
  }),
});
const body = (await res.json()) as Record<string, unknown>;
const header = res.headers.get('payment-response');
console.log(
  JSON.stringify({
    status: res.status,
    decision: body.decision ?? null,
    receipt_id: body.receipt_id ?? null,
    receipt_jwt: body.receipt_jwt ?? null,
    settlement: header ? decodePaymentResponseHeader(header) : null,
    ...(res.ok ? {} : { problem: body }),
  }),
);

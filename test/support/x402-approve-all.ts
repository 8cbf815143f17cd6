/**
 * x402 without a chain, for tests of what the gate itself decides: a
 * facilitator on a real HTTP port that approves every payment and "settles"
 * anything it is sent, and a payer that signs real EIP-712 EIP-3009
 * authorizations with a local viem account, any term made wrong on purpose.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import { getAddress, toHex } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

export const NETWORK = 'eip155:84532';
export const CHAIN_ID = 84532;
export const TOKEN = getAddress('0x036cbd53842c5426634e7929541ec2318f3dcf7e');
export const PAY_TO = getAddress('0x209693bc6afc0c5328ba36faf03c514ef312287c');

export interface ApproveAll {
  url: string;
  calls: { verify: number; settle: number };
  close(): Promise<void>;
}

/** A facilitator that approves everything. */
export async function startApproveAll(): Promise<ApproveAll> {
  const calls = { verify: 0, settle: 0 };
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { paymentPayload?: { payload?: { authorization?: { from?: string } } } };
      const from = body.paymentPayload?.payload?.authorization?.from ?? '0x0000000000000000000000000000000000000001';
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/verify') {
        calls.verify++;
        return res.end(JSON.stringify({ isValid: true, payer: from }));
      }
      if (req.url === '/settle') {
        calls.settle++;
        return res.end(
          JSON.stringify({ success: true, payer: from, network: NETWORK, transaction: toHex(crypto.getRandomValues(new Uint8Array(32))) }),
        );
      }
      res.end(JSON.stringify({ kinds: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** The gate's x402 configuration for this facilitator. */
export const approveAllEnv = (facilitatorUrl: string): Record<string, string> => ({
  X402_PAY_TO: PAY_TO,
  X402_NETWORK: NETWORK,
  X402_ASSET: TOKEN,
  X402_ASSET_NAME: 'USDC',
  X402_ASSET_VERSION: '2',
  X402_FACILITATOR_URL: facilitatorUrl,
});

export const newPayer = (): PrivateKeyAccount => privateKeyToAccount(generatePrivateKey());

export interface PaymentTerms {
  /** The payer whose authorization it is. */
  payer: PrivateKeyAccount;
  /** The resource URL the payment is for (null: none named). */
  resource: string | null;
  /** The price asked, in atomic units. */
  price: bigint;
  value?: bigint;
  to?: `0x${string}`;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: `0x${string}`;
  /** The nonce as written in the payload (the signature covers `nonce`). */
  writtenNonce?: string;
  /** What the payload says it accepted. */
  accepted?: Partial<PaymentRequirements>;
  /** The EIP-712 domain signed. */
  domain?: { chainId?: number; verifyingContract?: `0x${string}`; name?: string };
  /** Who signs (default the payer). */
  signer?: PrivateKeyAccount;
}

/** A v2 PAYMENT-SIGNATURE header. */
export async function signPayment(o: PaymentTerms): Promise<string> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const message = {
    from: o.payer.address,
    to: o.to ?? PAY_TO,
    value: o.value ?? o.price,
    validAfter: o.validAfter ?? now - 600n,
    validBefore: o.validBefore ?? now + 60n,
    nonce: o.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await (o.signer ?? o.payer).signTypedData({
    domain: {
      name: o.domain?.name ?? 'USDC',
      version: '2',
      chainId: o.domain?.chainId ?? CHAIN_ID,
      verifyingContract: o.domain?.verifyingContract ?? TOKEN,
    },
    types: authorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  const accepted = {
    scheme: 'exact',
    network: NETWORK,
    amount: o.price.toString(),
    asset: TOKEN,
    payTo: PAY_TO,
    maxTimeoutSeconds: 60,
    extra: { name: 'USDC', version: '2' },
    ...o.accepted,
  } as PaymentRequirements;
  const payload = {
    x402Version: 2,
    ...(o.resource === null ? {} : { resource: { url: o.resource, description: 'paid call', mimeType: 'application/json' } }),
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

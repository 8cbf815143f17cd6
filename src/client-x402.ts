/**
 * x402 for the typed client (src/client.ts): from a 402's PAYMENT-REQUIRED
 * header (x402 v2), the PAYMENT-SIGNATURE header that pays it with scheme
 * `exact`, an EIP-3009 `transferWithAuthorization` signed as EIP-712 typed
 * data by the payer (a viem account, or anything with its `signTypedData`),
 * as the official x402 EVM client does; and the PAYMENT-RESPONSE decoded.
 * Base64 of UTF-8 JSON both ways, as @x402/core encodes its headers.
 */

/** Signs EIP-712 typed data as `address` (a viem LocalAccount has this shape). */
export interface X402Signer {
  address: `0x${string}`;
  signTypedData(args: {
    domain: { name: string; version: string; chainId: number; verifyingContract: `0x${string}` };
    types: typeof AUTHORIZATION_TYPES;
    primaryType: 'TransferWithAuthorization';
    message: { from: `0x${string}`; to: `0x${string}`; value: bigint; validAfter: bigint; validBefore: bigint; nonce: `0x${string}` };
  }): Promise<`0x${string}`>;
}

/** One way to pay, as a v2 402 lists it under `accepts`. */
export interface PaymentRequirements {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra?: { name?: string; version?: string; [k: string]: unknown };
  [k: string]: unknown;
}

export interface PaymentRequired {
  x402Version: number;
  error?: string;
  resource?: { url: string; description?: string; mimeType?: string };
  accepts: PaymentRequirements[];
}

/** The settlement the service reports in PAYMENT-RESPONSE (or X-PAYMENT-RESPONSE). */
export interface PaymentResponse {
  success: boolean;
  transaction?: string;
  network?: string;
  payer?: string;
  [k: string]: unknown;
}

/** EIP-3009's TransferWithAuthorization, the EIP-712 types the token contract verifies (the same as @x402/evm's). */
export const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

/** An authorization valid from this long ago, to allow for clock skew between payer and chain. */
const VALID_AFTER_SKEW_SECONDS = 600;

export function encodeHeader(value: unknown): string {
  let bin = '';
  for (const b of new TextEncoder().encode(JSON.stringify(value))) bin += String.fromCharCode(b);
  return btoa(bin);
}

export function decodeHeader<T>(header: string): T {
  const bin = atob(header.trim());
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)))) as T;
}

const hex = (bytes: Uint8Array): `0x${string}` => `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;

/** The first of the 402's requirements this client can pay: scheme exact on an EVM network (`eip155:<chain id>`). */
export function payableRequirements(required: PaymentRequired): (PaymentRequirements & { chainId: number }) | undefined {
  for (const r of required.accepts ?? []) {
    const m = /^eip155:([1-9][0-9]*)$/.exec(r.network);
    if (r.scheme === 'exact' && m && r.extra?.name && r.extra.version) return { ...r, chainId: Number(m[1]) };
  }
  return undefined;
}

/**
 * The PAYMENT-SIGNATURE header paying `required` with `signer`: an
 * authorization of exactly the amount asked, to the payee asked, valid for
 * the requirements' `maxTimeoutSeconds`, with a fresh random 32-byte nonce.
 * Undefined when none of the requirements can be paid this way.
 */
export async function paymentHeader(
  required: PaymentRequired,
  signer: X402Signer,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<string | undefined> {
  const r = payableRequirements(required);
  if (!r) return undefined;
  const { chainId, ...accepted } = r;
  const message = {
    from: signer.address,
    to: r.payTo as `0x${string}`,
    value: BigInt(r.amount),
    validAfter: BigInt(nowSeconds - VALID_AFTER_SKEW_SECONDS),
    validBefore: BigInt(nowSeconds + r.maxTimeoutSeconds),
    nonce: hex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await signer.signTypedData({
    domain: { name: r.extra!.name!, version: r.extra!.version!, chainId, verifyingContract: r.asset as `0x${string}` },
    types: AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });
  return encodeHeader({
    x402Version: 2,
    ...(required.resource ? { resource: required.resource } : {}),
    accepted,
    payload: {
      signature,
      authorization: {
        ...message,
        value: message.value.toString(),
        validAfter: message.validAfter.toString(),
        validBefore: message.validBefore.toString(),
      },
    },
  });
}

/**
 * The payment terms, checked by the gate itself before any facilitator is
 * asked: a facilitator verifies that a signature can settle, not that it pays
 * for what we sell. Scheme "exact" with an EIP-3009 transferWithAuthorization:
 *
 *   value        =  the price (atomic units of the asset): scheme exact, as the official
 *                 facilitators check it; more would move more than the act costs
 *   to           =  our payTo
 *   asset, network: the EIP-712 domain is our asset's contract on our chain, so a
 *                 signature made for another token or chain does not verify
 *   validAfter   <= now, and validBefore far enough ahead for the settlement to land
 *   resource     =  the resource called (x402 v2; a v1 payload names none)
 *   nonce        canonical: 0x and exactly 64 hex digits (one byte string, one payment)
 *   signature    an EIP-712 signature by `from` over all of the above (viem's
 *                verifyTypedData with the official EIP-3009 types of @x402/evm)
 *
 * Pure apart from the clock it is given; the signature check is CPU only.
 */
import { authorizationTypes } from '@x402/evm';
import { getAddress, isAddress, isHex, verifyTypedData } from 'viem';
import type { PaymentPayload } from '@x402/core/types';

export interface PaymentTerms {
  /** The price, in atomic units of the asset. */
  price: string;
  payTo: string;
  asset: string;
  /** CAIP-2, `eip155:<chain id>`. */
  network: string;
  /** The token's EIP-712 domain name and version. */
  assetName: string;
  assetVersion: string;
  /** The URL of the resource called. */
  resource: string;
}

/** A settlement must be able to land before the authorization expires: what the x402 facilitators also require. */
export const MIN_VALIDITY_SECONDS = 6;

export interface AcceptedAuthorization {
  from: `0x${string}`;
  /** The amount the authorization moves (the price). */
  value: string;
  /** Lower-case, 0x + 64 hex digits. */
  nonce: string;
}

export type TermsVerdict =
  | { ok: true; authorization: AcceptedAuthorization }
  | { ok: false; code: 'x402_payment_malformed' | 'x402_payment_mismatch' | 'x402_signature_invalid'; fields: string[]; detail: string };

/** The chain id of an `eip155:<n>` network, or undefined for any other namespace. */
export function evmChainId(network: string): number | undefined {
  const m = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  return m ? Number(m[1]) : undefined;
}

const UINT256 = /^(0|[1-9][0-9]{0,77})$/;
const NONCE = /^0x[0-9a-fA-F]{64}$/;
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The payer and canonical nonce of an EIP-3009 payload (what identifies the payment), or undefined. */
export function authorizationIdentity(payload: PaymentPayload): { from: string; nonce: string } | undefined {
  const auth = (payload.payload as Record<string, unknown>).authorization as Record<string, unknown> | undefined;
  if (!auth || typeof auth !== 'object' || typeof auth.from !== 'string' || !isAddress(auth.from, { strict: false })) return undefined;
  return typeof auth.nonce === 'string' && NONCE.test(auth.nonce) ? { from: auth.from, nonce: auth.nonce.toLowerCase() } : undefined;
}

/** Checks the signed authorization of `payload` against our terms at `nowSeconds`. */
export async function checkPaymentTerms(payload: PaymentPayload, terms: PaymentTerms, nowSeconds: number): Promise<TermsVerdict> {
  const malformed = (detail: string): TermsVerdict => ({ ok: false, code: 'x402_payment_malformed', fields: ['payload'], detail });
  const inner = payload.payload as Record<string, unknown>;
  const auth = inner.authorization as Record<string, unknown> | undefined;
  const signature = inner.signature;
  if (!auth || typeof auth !== 'object' || typeof signature !== 'string' || !isHex(signature)) {
    return malformed('the payment is not an EIP-3009 authorization with its signature (scheme exact)');
  }
  const { from, to, value, validAfter, validBefore, nonce } = auth;
  if (typeof from !== 'string' || !isAddress(from, { strict: false }) || typeof to !== 'string' || !isAddress(to, { strict: false })) {
    return malformed('authorization.from and authorization.to must be addresses');
  }
  for (const [name, v] of [
    ['value', value],
    ['validAfter', validAfter],
    ['validBefore', validBefore],
  ] as const) {
    if (typeof v !== 'string' || !UINT256.test(v)) return malformed(`authorization.${name} must be a decimal uint256 string`);
  }
  if (typeof nonce !== 'string') return malformed('authorization.nonce must be a string');

  const chainId = evmChainId(terms.network);
  const wrong: Array<[string, string]> = [];
  if (BigInt(value as string) !== BigInt(terms.price)) {
    const than = BigInt(value as string) < BigInt(terms.price) ? 'less' : 'more';
    wrong.push([
      'value',
      `the authorization moves ${String(value)}, ${than} than the price ${terms.price} (scheme exact: exactly the price)`,
    ]);
  }
  if (!same(to, terms.payTo)) wrong.push(['to', `the authorization pays ${to}, not ${terms.payTo}`]);
  if (BigInt(validAfter as string) > BigInt(nowSeconds)) wrong.push(['valid_after', 'the authorization is not valid yet']);
  if (BigInt(validBefore as string) < BigInt(nowSeconds + MIN_VALIDITY_SECONDS)) {
    wrong.push(['valid_before', `the authorization expires within ${MIN_VALIDITY_SECONDS} s (or has expired): it could not be settled`]);
  }
  if (!NONCE.test(nonce)) wrong.push(['nonce', 'the nonce must be 32 bytes written as 0x and exactly 64 hex digits']);
  if (payload.x402Version === 2) {
    const url = (payload as { resource?: { url?: unknown } | null }).resource?.url;
    if (url !== terms.resource)
      wrong.push(['resource', `the payment is for ${typeof url === 'string' ? url : 'no resource'}, not ${terms.resource}`]);
  }
  if (chainId === undefined) wrong.push(['network', `${terms.network} is not an EVM network`]);
  if (wrong.length) {
    return {
      ok: false,
      code: 'x402_payment_mismatch',
      fields: wrong.map((w) => w[0]),
      detail: `the signed authorization does not match our terms: ${wrong.map((w) => w[1]).join('; ')}`,
    };
  }
  let valid = false;
  try {
    valid = await verifyTypedData({
      address: getAddress(from),
      domain: { name: terms.assetName, version: terms.assetVersion, chainId: chainId!, verifyingContract: getAddress(terms.asset) },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: getAddress(from),
        to: getAddress(to),
        value: BigInt(value as string),
        validAfter: BigInt(validAfter as string),
        validBefore: BigInt(validBefore as string),
        nonce: nonce as `0x${string}`,
      },
      signature: signature as `0x${string}`,
    });
  } catch {
    valid = false;
  }
  if (!valid) {
    return {
      ok: false,
      code: 'x402_signature_invalid',
      fields: ['signature'],
      detail: `the signature is not ${from}'s EIP-712 signature of this authorization for ${terms.asset} on ${terms.network} (an externally owned account's signature is required)`,
    };
  }
  return { ok: true, authorization: { from: getAddress(from), value: value as string, nonce: nonce.toLowerCase() } };
}

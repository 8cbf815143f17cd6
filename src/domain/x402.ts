/**
 * x402 payment requirements (github.com/coinbase/x402, transports v2 and v1),
 * in the official types of @x402/core:
 *  - v2: header PAYMENT-REQUIRED = base64(JSON {x402Version: 2, error, resource, accepts[]});
 *  - v1: the JSON body {x402Version: 1, error, accepts[]} for older clients.
 * Pure: builds the documents from settings. Verifying and settling a payment
 * is src/payments/x402/ (through a facilitator).
 */
import type { PaymentRequired, PaymentRequiredV1, PaymentRequirements, PaymentRequirementsV1 } from '@x402/core/types';

export interface X402Settings {
  payTo: string;
  /** CAIP-2 network id, e.g. "eip155:84532". */
  network: string;
  asset: string;
  assetName: string;
  assetVersion: string;
  decimals: number;
  maxTimeoutSeconds: number;
}

export interface X402Resource {
  url: string;
  description: string;
  mimeType: string;
}

/** v1 clients name networks by short names; these are the ones x402 v1 defines for CAIP-2 ids we know. */
const V1_NETWORK_NAMES: Record<string, string> = {
  'eip155:8453': 'base',
  'eip155:84532': 'base-sepolia',
};

/** The v1 name of a CAIP-2 network (the CAIP-2 id itself when v1 has no name for it). */
export const v1NetworkName = (network: string): string => V1_NETWORK_NAMES[network] ?? network;

export class X402PriceError extends Error {
  override name = 'X402PriceError';
}

/** A price in micro-USD as the asset's atomic units (1 USD = 1 asset unit); exact or an error. */
export function priceInAtomicUnits(micros: number, decimals: number): string {
  const m = BigInt(micros);
  if (decimals >= 6) return (m * 10n ** BigInt(decimals - 6)).toString();
  const div = 10n ** BigInt(6 - decimals);
  if (m % div !== 0n) throw new X402PriceError(`${micros} micro-USD is not a whole number of units with ${decimals} decimals`);
  return (m / div).toString();
}

/** The one payment option we accept (scheme "exact") for a price, in v2 form. */
export function requirementsV2(s: X402Settings, amount: string): PaymentRequirements {
  return {
    scheme: 'exact',
    network: s.network as PaymentRequirements['network'],
    amount,
    asset: s.asset,
    payTo: s.payTo,
    maxTimeoutSeconds: s.maxTimeoutSeconds,
    extra: { name: s.assetName, version: s.assetVersion },
  };
}

/** The same option in v1 form. */
export function requirementsV1(s: X402Settings, resource: X402Resource, amount: string): PaymentRequirementsV1 {
  return {
    scheme: 'exact',
    network: v1NetworkName(s.network) as PaymentRequirementsV1['network'],
    maxAmountRequired: amount,
    asset: s.asset,
    payTo: s.payTo,
    resource: resource.url,
    description: resource.description,
    mimeType: resource.mimeType,
    outputSchema: null as unknown as Record<string, unknown>,
    maxTimeoutSeconds: s.maxTimeoutSeconds,
    extra: { name: s.assetName, version: s.assetVersion },
  };
}

export function paymentRequiredV2(s: X402Settings, resource: X402Resource, amount: string, error: string): PaymentRequired {
  return { x402Version: 2, error, resource, accepts: [requirementsV2(s, amount)] };
}

export function paymentRequiredV1(s: X402Settings, resource: X402Resource, amount: string, error: string): PaymentRequiredV1 {
  return { x402Version: 1, error, accepts: [requirementsV1(s, resource, amount)] };
}

/**
 * x402 payment requirements (github.com/coinbase/x402, transports v2 and v1):
 *  - v2: header PAYMENT-REQUIRED = base64(JSON {x402Version: 2, error, resource, accepts[]});
 *  - v1: the JSON body {x402Version: 1, error, accepts[]} for older clients.
 * Pure: builds the documents from settings; verifying or settling a payment
 * needs a facilitator, which this build does not call (see README).
 */

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

export function paymentRequiredV2(s: X402Settings, resource: X402Resource, amount: string, error: string) {
  return {
    x402Version: 2,
    error,
    resource,
    accepts: [
      {
        scheme: 'exact',
        network: s.network,
        amount,
        asset: s.asset,
        payTo: s.payTo,
        maxTimeoutSeconds: s.maxTimeoutSeconds,
        extra: { name: s.assetName, version: s.assetVersion },
      },
    ],
  };
}

export function paymentRequiredV1(s: X402Settings, resource: X402Resource, amount: string, error: string) {
  return {
    x402Version: 1,
    error,
    accepts: [
      {
        scheme: 'exact',
        network: V1_NETWORK_NAMES[s.network] ?? s.network,
        maxAmountRequired: amount,
        asset: s.asset,
        payTo: s.payTo,
        resource: resource.url,
        description: resource.description,
        mimeType: resource.mimeType,
        outputSchema: null,
        maxTimeoutSeconds: s.maxTimeoutSeconds,
        extra: { name: s.assetName, version: s.assetVersion },
      },
    ],
  };
}

/** The value of a base64-JSON x402 header. */
export function encodeX402Header(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

/** Decodes a presented PAYMENT-SIGNATURE / X-PAYMENT header; undefined when it is not base64 JSON of an object. */
export function decodeX402Header(value: string): Record<string, unknown> | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(value.trim())) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(value.trim(), 'base64').toString('utf8'));
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The running x402 configuration: on only when payee, network, asset and facilitator are all set. */
import type { Config } from '../../config.ts';
import type { X402Settings } from '../../domain/x402.ts';

export interface X402Setup {
  settings: X402Settings;
  facilitatorUrl: string;
  /** [name, value] of the header sent to the facilitator; a secret. */
  authHeader: [string, string] | undefined;
  timeoutMs: number;
}

/** The x402 setup, or undefined when x402 is not configured (the default; SPEC 5.4). */
export function x402SetupOf(c: Config): X402Setup | undefined {
  if (!c.X402_PAY_TO || !c.X402_NETWORK || !c.X402_ASSET || !c.X402_FACILITATOR_URL) return undefined;
  const auth = c.X402_FACILITATOR_AUTH_HEADER;
  const colon = auth?.indexOf(':') ?? -1;
  return {
    settings: {
      payTo: c.X402_PAY_TO,
      network: c.X402_NETWORK,
      asset: c.X402_ASSET,
      assetName: c.X402_ASSET_NAME,
      assetVersion: c.X402_ASSET_VERSION,
      decimals: c.X402_ASSET_DECIMALS,
      maxTimeoutSeconds: c.X402_MAX_TIMEOUT_SECONDS,
    },
    facilitatorUrl: c.X402_FACILITATOR_URL,
    authHeader: auth && colon > 0 ? [auth.slice(0, colon).trim(), auth.slice(colon + 1).trim()] : undefined,
    timeoutMs: c.X402_FACILITATOR_TIMEOUT_MS,
  };
}

/** Whether this running service takes x402 payments: the one answer every discovery document gives. */
export const x402Configured = (c: Config): boolean => x402SetupOf(c) !== undefined;

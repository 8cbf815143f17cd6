/**
 * The facilitator, through the official HTTP client of @x402/core: POST
 * {url}/verify and {url}/settle with {x402Version, paymentPayload,
 * paymentRequirements}. Every failure is sorted into what it means for us:
 * a refusal (the payment is bad) or an outage (nobody knows; the caller retries).
 */
import { HTTPFacilitatorClient } from '@x402/core/http';
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequirements, type SettleResponse } from '@x402/core/types';
import type { X402Setup } from './settings.ts';

export type VerifyOutcome =
  | { kind: 'valid'; payer: string | undefined }
  | { kind: 'invalid'; reason: string; message: string | undefined }
  | { kind: 'unavailable'; detail: string };

export type SettleOutcome =
  | { kind: 'settled'; response: SettleResponse }
  | { kind: 'refused'; reason: string; message: string | undefined }
  /** Unknown: the facilitator may or may not have settled (timeout, connection lost, malformed answer). */
  | { kind: 'unknown'; detail: string };

export interface Facilitator {
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyOutcome>;
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleOutcome>;
}

const describe = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}` : String(e)).slice(0, 300);

export function httpFacilitator(setup: X402Setup): Facilitator {
  const auth = setup.authHeader;
  const client = new HTTPFacilitatorClient({
    url: setup.facilitatorUrl,
    timeoutMs: setup.timeoutMs,
    ...(auth
      ? {
          createAuthHeaders: async () => {
            const h = { [auth[0]]: auth[1] };
            return { verify: h, settle: h, supported: h };
          },
        }
      : {}),
  });
  // The requirements are v1- or v2-shaped as the payload's version says; the client passes them through.
  return {
    async verify(payload, requirements) {
      try {
        const r = await client.verify(payload, requirements);
        return r.isValid
          ? { kind: 'valid', payer: r.payer }
          : { kind: 'invalid', reason: r.invalidReason ?? 'invalid_payment', message: r.invalidMessage };
      } catch (e) {
        if (e instanceof VerifyError) return { kind: 'invalid', reason: e.invalidReason ?? 'invalid_payment', message: e.invalidMessage };
        return { kind: 'unavailable', detail: describe(e) };
      }
    },
    async settle(payload, requirements) {
      try {
        const r = await client.settle(payload, requirements);
        return r.success && r.transaction
          ? { kind: 'settled', response: r }
          : { kind: 'refused', reason: r.errorReason ?? 'settlement_failed', message: r.errorMessage };
      } catch (e) {
        if (e instanceof SettleError) return { kind: 'refused', reason: e.errorReason ?? 'settlement_failed', message: e.errorMessage };
        return { kind: 'unknown', detail: describe(e) };
      }
    },
  };
}

/**
 * RR-1 require-receipt (SPEC 2.4, 7): an h3 middleware for the services that
 * agents act on. Before an irreversible act it answers HTTP 428 with the
 * `Receipt-Required` header unless the request carries a valid receipt from
 * the gate: signed (Ed25519) by the gate, a PERMIT, for this act, fresh, and
 * never used before. Unsigned, forged, HOLD/DENY and replayed receipts are
 * refused with 428 and a reason.
 *
 * The `Gate-Receipt` header carries a receipt in either form: a compact JWS
 * (execute-gate), or a self-contained receipt document (the evidence of
 * GET /v1/receipts/{id}: entry, index, inclusion proof, signed and cosigned
 * checkpoint) as base64url of its JSON, which is what a hop or act receipt is.
 * Both are verified offline; each receipt id is claimed once, whatever its form.
 *
 * Self-contained: it needs only h3 and jose, so another service can mount it.
 *
 * @example
 *   import { requireReceipt, remoteReceiptVerifier } from 'fusegate/rr1';
 *   app.post('/wire', handler, {
 *     middleware: [requireReceipt({ act: 'wire', gate: 'https://gate.example',
 *       verify: remoteReceiptVerifier('https://gate.example/.well-known/prefinality-jwks.json') })],
 *   });
 */
import { HTTPResponse, type H3Event, type Middleware } from 'h3';
import { createRemoteJWKSet } from 'jose';
import { jwkKeyLookup, type KeyLookup, type PublicJwk } from '../crypto/jws-verify.ts';
import { verifyReceiptToken } from '../crypto/receipt.ts';
import type { WitnessPolicy } from '../crypto/witness-policy.ts';

import { RECEIPT_HEADER, RECEIPT_TYP, REQUIRED_HEADER, REQUIRED_STATUS } from './constants.ts';

export { RECEIPT_HEADER, RECEIPT_TYP, REQUIRED_HEADER, REQUIRED_STATUS };

export type Verified = { valid: true; payload: Record<string, unknown> } | { valid: false; reason: string; detail: string };

/** Why a receipt was refused. */
export type RefusalReason =
  | 'receipt_missing'
  | 'receipt_unsigned'
  | 'receipt_not_permit'
  | 'receipt_wrong_act'
  | 'receipt_wrong_gate'
  | 'receipt_stale'
  | 'receipt_replayed';

export interface RequireReceiptOptions {
  /** The act kind this route performs; a receipt must be for it (its `data.act_kind`). */
  act: string;
  /** The gate's base URL: receipts must be issued by it (`iss`); named in the challenge. */
  gate: string;
  /** Checks a receipt (a JWS or a receipt document) and returns its payload. */
  verify: (token: string) => Promise<Verified>;
  /** Claims a receipt id exactly once; false when it was already used. Default: in this process's memory only. */
  claim?: (receiptId: string, event: H3Event) => Promise<boolean>;
  /**
   * Called on every 428 (e.g. to meter the challenge); the fields it returns are
   * added to the 428 body (e.g. the charge and its receipt). Errors in it are the service's own.
   */
  onChallenge?: (event: H3Event, reason: RefusalReason) => Promise<Record<string, unknown> | void> | Record<string, unknown> | void;
  /** Oldest receipt accepted, seconds (default 300). */
  maxAgeSeconds?: number;
  /** Where the agent gets a receipt, named in the challenge body. */
  obtainUrl?: string;
}

export interface RemoteVerifierOptions {
  /** The receipts log's note verifier keys, pinned. Default: read once from `logUrl`. */
  logKeys?: string[];
  /** Where the receipts log's keys are published (default: /api/v1/logs/receipts beside the JWKS). */
  logUrl?: string;
  /** A witness policy (crypto/witness-policy.ts): cosignatures are checked, a tampered one refused. */
  witnesses?: WitnessPolicy;
  /** Refuse a receipt document unless the policy's quorum cosigned its checkpoint. */
  requireQuorum?: boolean;
}

/**
 * Verifies receipts against the gate's published keys, with the gate's one
 * receipt verifier: a JWS against the JWKS (`/.well-known/prefinality-jwks.json`),
 * a receipt document against the receipts log's note verifier keys.
 */
export function remoteReceiptVerifier(jwksUrl: string, o: RemoteVerifierOptions = {}): (token: string) => Promise<Verified> {
  const keys = remoteKeyLookup(new URL(jwksUrl));
  let logKeys: Promise<string[]> | undefined = o.logKeys ? Promise.resolve(o.logKeys) : undefined;
  const fetchLogKeys = async () => {
    const res = await fetch(o.logUrl ?? new URL('/api/v1/logs/receipts', jwksUrl).href, { headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`the receipts log keys answered ${res.status}`);
    return ((await res.json()) as { verifier_keys: string[] }).verifier_keys;
  };
  return async (token) => {
    const isJws = token.split('.').length === 3;
    let trusted: string[] = [];
    if (!isJws) {
      logKeys ??= fetchLogKeys().catch((e: unknown) => {
        logKeys = undefined;
        throw e;
      });
      try {
        trusted = await logKeys;
      } catch (e) {
        return { valid: false, reason: 'unavailable', detail: `cannot read the receipts log's keys: ${(e as Error).message}` };
      }
    }
    const check = await verifyReceiptToken(token, {
      keys,
      logKeys: trusted,
      ...(o.witnesses ? { witnesses: o.witnesses } : {}),
      ...(o.requireQuorum ? { requireQuorum: true } : {}),
    });
    return check.valid ? { valid: true, payload: check.payload } : { valid: false, reason: check.reason, detail: check.detail };
  };
}

/**
 * The keys of a JWKS that jose fetches and caches: a kid it does not hold
 * makes it fetch the set again (at most once per its cooldown).
 */
function remoteKeyLookup(url: URL): KeyLookup {
  const remote = createRemoteJWKSet(url);
  return {
    async byKid(kid) {
      try {
        await remote({ alg: 'EdDSA', kid });
      } catch {
        return undefined;
      }
      return jwkKeyLookup((remote.jwks()?.keys ?? []) as PublicJwk[]).byKid(kid);
    },
  };
}

/** A process-local claim store: enough for one process; use a database for several. */
export function memoryClaims(max = 100_000): (id: string) => Promise<boolean> {
  const seen = new Set<string>();
  return async (id) => {
    if (seen.has(id)) return false;
    if (seen.size >= max) seen.delete(seen.values().next().value!);
    seen.add(id);
    return true;
  };
}

const quote = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;

/** The 428 answer: problem+json, with the Receipt-Required header (an RFC 9651 dictionary). */
export function challenge(
  o: Pick<RequireReceiptOptions, 'act' | 'gate' | 'obtainUrl'>,
  reason: RefusalReason,
  detail: string,
  extra: Record<string, unknown> = {},
): HTTPResponse {
  const header = `act=${quote(o.act)}, gate=${quote(o.gate)}, header=${quote(RECEIPT_HEADER)}, reason=${quote(reason)}`;
  return new HTTPResponse(
    JSON.stringify({
      type: `https://fusegate.dev/problems/${reason}`,
      title: 'Receipt required',
      status: REQUIRED_STATUS,
      detail,
      code: reason,
      standard: 'RR-1',
      act: o.act,
      gate: o.gate,
      receipt_header: RECEIPT_HEADER,
      ...(o.obtainUrl ? { obtain_receipt: o.obtainUrl } : {}),
      ...extra,
    }),
    {
      status: REQUIRED_STATUS,
      headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', [REQUIRED_HEADER.toLowerCase()]: header },
    },
  );
}

/** The RR-1 middleware: 428 unless a valid, fresh, unused PERMIT receipt for `act` accompanies the request. */
export function requireReceipt(o: RequireReceiptOptions): Middleware {
  const claim = o.claim ?? memoryClaims();
  const maxAge = (o.maxAgeSeconds ?? 300) * 1000;
  return async (event, next) => {
    const refuse = async (reason: RefusalReason, detail: string) => {
      const extra = await o.onChallenge?.(event, reason);
      return challenge(o, reason, detail, extra ?? {});
    };
    const jws = event.req.headers.get(RECEIPT_HEADER)?.trim();
    if (!jws)
      return refuse(
        'receipt_missing',
        `this act (${o.act}) is irreversible: send a receipt from ${o.gate} in the ${RECEIPT_HEADER} header`,
      );
    const v = await o.verify(jws);
    if (!v.valid)
      return refuse('receipt_unsigned', `the receipt is not signed by the gate, nor proven in its signed log (${v.reason}: ${v.detail})`);
    const p = v.payload;
    if (p.iss !== o.gate) return refuse('receipt_wrong_gate', `the receipt was issued by ${String(p.iss)}, not ${o.gate}`);
    if (p.decision !== 'PERMIT')
      return refuse('receipt_not_permit', `the receipt's decision is ${String(p.decision)}; only a PERMIT lets the act go ahead`);
    const data = (p.data ?? {}) as Record<string, unknown>;
    if (data.act_kind !== o.act) return refuse('receipt_wrong_act', `the receipt is for act ${String(data.act_kind)}, not ${o.act}`);
    // iat is a NumericDate (seconds); receipts issued before it was are RFC 3339 text.
    const iat = typeof p.iat === 'number' ? p.iat * 1000 : Date.parse(String(p.iat));
    if (!Number.isFinite(iat) || Date.now() - iat > maxAge || iat - Date.now() > 30_000)
      return refuse('receipt_stale', 'the receipt is too old (or from the future)');
    if (!(await claim(String(p.receipt_id), event)))
      return refuse('receipt_replayed', `receipt ${String(p.receipt_id)} was already used: a receipt authorises one act`);
    event.context.rr1 = { receipt_id: p.receipt_id, payload: p };
    return next();
  };
}

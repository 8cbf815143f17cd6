/**
 * RR-1 conformance (SPEC 2.4: "conformance requires: manifest, challenge,
 * replay refuses unsigned holds"). Runs the three steps against any base URL:
 *
 *   1. manifest  GET /.well-known/agent-actions.json: RR-1, Receipt-Required,
 *                428, and at least one irreversible action;
 *   2. challenge the first action without a receipt answers 428 with the
 *                Receipt-Required header;
 *   3. replay    an unsigned HOLD receipt and a forged one are refused (428);
 *                with a real receipt (optional), the first use passes and its
 *                replay is refused.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { RECEIPT_HEADER, RECEIPT_TYP, REQUIRED_HEADER, REQUIRED_STATUS } from './middleware.ts';

export interface Step {
  step: 'manifest' | 'challenge' | 'replay';
  ok: boolean;
  detail: string;
}

export interface ConformanceResult {
  url: string;
  conformant: boolean;
  badge: 'RR-1 conformant' | null;
  steps: Step[];
}

interface ManifestAction {
  act: string;
  method: string;
  url: string;
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');

/** A receipt-shaped JWS that no gate signed: `alg: none`, decision HOLD. */
function unsignedHold(act: string): string {
  return `${b64({ alg: 'none', typ: RECEIPT_TYP })}.${b64({ receipt_id: 'rcpt_unsigned', decision: 'HOLD', data: { act_kind: act }, iat: Math.floor(Date.now() / 1000) })}.`;
}

/** A PERMIT signed by a key nobody published. */
function forgedPermit(act: string, gate: string): string {
  const { privateKey } = generateKeyPairSync('ed25519');
  const input = `${b64({ alg: 'EdDSA', typ: RECEIPT_TYP, kid: 'forged' })}.${b64({ receipt_id: 'rcpt_forged', decision: 'PERMIT', iss: gate, data: { act_kind: act }, iat: Math.floor(Date.now() / 1000) })}`;
  return `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}`;
}

async function attempt(a: ManifestAction, receipt?: string): Promise<Response> {
  return fetch(a.url, {
    method: a.method,
    headers: { 'content-type': 'application/json', ...(receipt ? { [RECEIPT_HEADER]: receipt } : {}) },
    body: a.method === 'GET' || a.method === 'HEAD' ? null : '{}',
    redirect: 'manual',
  });
}

export async function checkConformance(
  baseUrl: string,
  opts: { receipt?: string; fetchTimeoutMs?: number } = {},
): Promise<ConformanceResult> {
  const url = baseUrl.replace(/\/+$/, '');
  const steps: Step[] = [];
  const done = (): ConformanceResult => {
    const conformant = steps.length === 3 && steps.every((s) => s.ok);
    return { url, conformant, badge: conformant ? 'RR-1 conformant' : null, steps };
  };

  let action: ManifestAction | undefined;
  let gate = '';
  try {
    const r = await fetch(`${url}/.well-known/agent-actions.json`);
    const m = (await r.json()) as Record<string, unknown>;
    const actions = Array.isArray(m.actions) ? (m.actions as ManifestAction[]) : [];
    action = actions.find((a) => typeof a?.url === 'string' && typeof a?.act === 'string');
    gate = String(m.gate ?? m.base_url ?? '');
    const ok = r.ok && m.standard === 'RR-1' && m.header === REQUIRED_HEADER && m.status_code === REQUIRED_STATUS && action !== undefined;
    steps.push({
      step: 'manifest',
      ok,
      detail: ok
        ? `${actions.length} irreversible action(s), first: ${action!.method} ${action!.url}`
        : 'the manifest must state RR-1, Receipt-Required, 428 and list actions [{act, method, url}]',
    });
  } catch (e) {
    steps.push({ step: 'manifest', ok: false, detail: `no manifest: ${(e as Error).message}` });
  }
  if (!action) return done();

  const c = await attempt(action);
  const challenged = c.status === REQUIRED_STATUS && c.headers.has(REQUIRED_HEADER);
  steps.push({
    step: 'challenge',
    ok: challenged,
    detail: challenged
      ? `428 with ${REQUIRED_HEADER}: ${c.headers.get(REQUIRED_HEADER)}`
      : `expected 428 with ${REQUIRED_HEADER}, got ${c.status}`,
  });

  const problems: string[] = [];
  for (const [name, jws] of [
    ['unsigned HOLD', unsignedHold(action.act)],
    ['forged PERMIT', forgedPermit(action.act, gate)],
  ] as const) {
    const r = await attempt(action, jws);
    if (r.status !== REQUIRED_STATUS) problems.push(`${name} got ${r.status}`);
  }
  if (opts.receipt) {
    const first = await attempt(action, opts.receipt);
    if (first.status < 200 || first.status > 299) problems.push(`a valid receipt got ${first.status}`);
    const again = await attempt(action, opts.receipt);
    if (again.status !== REQUIRED_STATUS) problems.push(`its replay got ${again.status}`);
  }
  steps.push({
    step: 'replay',
    ok: problems.length === 0,
    detail: problems.length
      ? problems.join('; ')
      : `unsigned and forged receipts refused${opts.receipt ? '; a real receipt passed once and its replay was refused' : ''}`,
  });
  return done();
}

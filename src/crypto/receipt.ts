/**
 * Verification of receipts (see src/ledger/receipts.ts for their making): a
 * receipt JWS alone, or a receipt's whole evidence (verifyReceiptEvidence).
 * A receipt JWS is a
 * compact JWS, alg EdDSA (or its RFC 9864 name Ed25519), typ
 * "fusegate-receipt+jws", kid looked up only in our own key set.
 */
import { base64, fromBase64 } from './base64.ts';
import { base64url, base64urlProblem, decodeBase64url } from './base64url.ts';
import { fromUtf8, utf8 } from './bytes.ts';
import { canonicalJson } from './canonical.ts';
import { decodeJws, verifyCompactJws, type KeyLookup } from './jws-verify.ts';
import { leafHash, verifyInclusion } from './merkle.ts';
import { openNote, parseCheckpointText, type Checkpoint } from './note.ts';
import { witnessesOf, type WitnessPolicy } from './witness-policy.ts';
import { ProofError } from './proof-error.ts';

export const RECEIPT_TYP = 'fusegate-receipt+jws';

/** The log of test keys' receipts (docs/test-mode.md), whose receipts carry the claim `"test": true`; no live receipt is ever in it. */
export const TEST_RECEIPTS_LOG = 'receipts-test';

/**
 * Live or test (docs/test-mode.md), the one rule every verifier applies: a
 * receipt claiming `"test": true` is proven in the test log only, any other
 * in the receipts log only. `origin` is the log's, from the checkpoint the
 * proof verified against. What the receipt is; throws when it is in the
 * wrong log.
 */
export function liveOrTest(payload: Record<string, unknown>, origin: string): string {
  const test = payload.test === true;
  const inTestLog = origin.endsWith(`/${TEST_RECEIPTS_LOG}`);
  if (test !== inTestLog)
    throw new ProofError(
      test ? `a test receipt is proven in the test log only, not in ${origin}` : `a live receipt is never in the test log ${origin}`,
    );
  return test
    ? "a TEST receipt: a test key's act, logged in the test log and billed nothing; not a live receipt"
    : 'a live receipt, in the receipts log';
}
/** `typ` of the JWS whose payload is a checkpoint body (src/crypto/seal.ts signs it). */
export const CHECKPOINT_TYP = 'fusegate-checkpoint+jws';
/** `typ` of a pre-finality receipt JWT (src/domain/prefinality-jwt.ts signs it). */
export const PREFINALITY_TYP = 'prefinality-receipt+jwt';

export type ReceiptCheck =
  { valid: true; kid: string; payload: Record<string, unknown> } | { valid: false; reason: string; detail: string };

/** A receipt JWS alone: EdDSA by a kid of `keys`, typ fusegate-receipt+jws, a JSON object payload. */
export async function verifyReceiptJws(keys: KeyLookup, jws: string): Promise<ReceiptCheck> {
  const check = await verifyCompactJws(jws, keys, RECEIPT_TYP);
  if (!check.valid) return check;
  try {
    return { valid: true, kid: check.kid, payload: decodeJws(jws).payload };
  } catch (e) {
    return { valid: false, reason: 'malformed', detail: (e as Error).message };
  }
}

/**
 * A receipt's published evidence (GET /v1/receipts/{id}, Accept: application/json).
 * `leaf` is the exact text of its receipts-log leaf: the compact JWS for a receipt
 * signed on its own, the canonical JSON of its payload for a batch-sealed one.
 */
export interface ReceiptEvidenceDoc {
  leaf: string;
  receipt: string | null;
  payload: Record<string, unknown>;
  log: { name: string; index: number; origin?: string; verifier_key: string };
  inclusion: { tree_size: number; leaf_hash: string; hashes: string[] };
  /** The signed checkpoint note, followed by the cosignature lines of its witnesses (C2SP tlog-cosignature). */
  checkpoint: string;
  checkpoint_jws?: string | null;
  /** What the gate says of its witnesses (the policy text, who cosigned, the quorum): a verifier pins the policy and checks it itself. */
  witnesses?: { policy: string; cosigned_by: string[]; quorum: string | null; quorum_holds: boolean } | null;
}

/** What a verifier trusts: the service's key set (for JWS), the log's note verifier key, and optionally a witness policy. */
export interface EvidenceTrust {
  keys: KeyLookup;
  logKey: string;
  /** With a policy, the cosignatures are checked (a tampered one fails) and the quorum is reported. */
  witnesses?: WitnessPolicy;
  /** Fail the `witnesses` check unless the policy's quorum cosigned the checkpoint. */
  requireQuorum?: boolean;
}

export type Check = { ok: boolean; detail: string };

async function attempt(f: () => string | Promise<string>): Promise<Check> {
  try {
    return { ok: true, detail: await f() };
  } catch (e) {
    return { ok: false, detail: (e as Error).message };
  }
}

/**
 * The one receipt verifier: everything a stranger checks, from the evidence, a
 * trusted log verifier key and a trusted key set (for the JWS). Every check is
 * reported; the receipt verifies when all are ok.
 *  - checkpoint: the note signature (C2SP signed note, Ed25519) by `logKey`;
 *  - checkpoint_jws (when present): EdDSA by a known kid, payload = the checkpoint body;
 *  - inclusion: SHA-256(0x00 || leaf) equals leaf_hash and is included (RFC 9162) at the checkpoint's size;
 *  - leaf: it is the receipt JWS (which must verify) or the canonical JSON of the payload;
 *  - witnesses (with a policy): every cosignature line by a policy witness verifies
 *    (C2SP tlog-cosignature); which witnesses cosigned and whether the quorum holds.
 */
export async function verifyReceiptEvidence(e: ReceiptEvidenceDoc, trust: EvidenceTrust): Promise<Record<string, Check>> {
  const checks: Record<string, Check> = {};
  let cp: Checkpoint | undefined;
  let body: string | undefined;
  checks.checkpoint = await attempt(async () => {
    body = await openNote(e.checkpoint, trust.logKey);
    cp = parseCheckpointText(body);
    if (e.log.origin !== undefined && cp.origin !== e.log.origin)
      throw new Error(`checkpoint origin ${cp.origin} is not the log's ${e.log.origin}`);
    return `${cp.origin} size ${cp.size}, note signature verifies`;
  });
  if (e.checkpoint_jws) {
    const jws = e.checkpoint_jws;
    checks.checkpoint_jws = await attempt(async () => {
      const check = await verifyCompactJws(jws, trust.keys, CHECKPOINT_TYP);
      if (!check.valid) throw new Error(check.detail);
      if (body === undefined || check.jws.payloadText !== body) throw new Error('its payload is not the checkpoint body');
      return `EdDSA by kid ${check.kid} over the checkpoint body`;
    });
  }
  checks.inclusion = await attempt(() => {
    if (!cp) throw new Error('no verified checkpoint');
    if (e.inclusion.tree_size !== cp.size) throw new Error(`proof is for size ${e.inclusion.tree_size}, the checkpoint has ${cp.size}`);
    const lh = leafHash(utf8(e.leaf));
    if (base64(lh) !== e.inclusion.leaf_hash) throw new Error('leaf_hash is not the hash of this leaf');
    verifyInclusion(e.log.index, cp.size, lh, e.inclusion.hashes.map(fromBase64), cp.root);
    return `entry ${e.log.index} of ${cp.size}`;
  });
  if (trust.witnesses) {
    const policy = trust.witnesses;
    checks.witnesses = await attempt(async () => {
      const w = await witnessesOf(e.checkpoint, policy);
      const who = w.cosigned_by.length ? `cosigned by ${w.cosigned_by.join(', ')}` : 'cosigned by no witness of the policy';
      const quorum =
        w.quorum === null ? 'the policy requires no quorum' : `quorum ${w.quorum} ${w.quorum_holds ? 'holds' : 'does NOT hold'}`;
      if (trust.requireQuorum && !w.quorum_holds) throw new Error(`${who}: ${quorum}`);
      return `${who}; ${quorum}`;
    });
  }
  if (e.receipt) {
    const sig = await verifyReceiptJws(trust.keys, e.receipt);
    checks.signature = sig.valid
      ? { ok: true, detail: `EdDSA signature by kid ${sig.kid}` }
      : { ok: false, detail: `${sig.reason}: ${sig.detail}` };
    checks.leaf = await attempt(() => {
      if (e.leaf !== e.receipt) throw new Error('the leaf is not this receipt');
      if (sig.valid && canonicalJson(sig.payload) !== canonicalJson(e.payload)) throw new Error('the payload is not the signed one');
      return 'the leaf is the signed receipt';
    });
  } else {
    checks.leaf = await attempt(() => {
      if (e.leaf !== canonicalJson(e.payload)) throw new Error('the leaf is not the canonical JSON of the payload');
      return 'the leaf is the canonical payload (batch-sealed receipt)';
    });
  }
  return checks;
}

/**
 * A receipt document (the evidence JSON of GET /v1/receipts/{id}) as carried in
 * a header: its JSON, or the base64url of its UTF-8 JSON (header values are
 * Latin-1, and a checkpoint's signature lines begin with U+2014). Undefined
 * when `text` is neither.
 */
export function parseReceiptDocument(text: string): ReceiptEvidenceDoc | undefined {
  const t = text.trim();
  let json = t;
  if (!t.startsWith('{')) {
    if (base64urlProblem(t) || t.length === 0) return undefined;
    json = fromUtf8(decodeBase64url(t));
  }
  try {
    const doc = JSON.parse(json) as ReceiptEvidenceDoc;
    const ok =
      doc &&
      typeof doc === 'object' &&
      typeof doc.leaf === 'string' &&
      typeof doc.checkpoint === 'string' &&
      doc.payload &&
      typeof doc.payload === 'object' &&
      doc.log &&
      doc.inclusion;
    return ok ? doc : undefined;
  } catch {
    return undefined;
  }
}

/** Encodes a receipt document for a header (base64url of its JSON), the form parseReceiptDocument reads. */
export function encodeReceiptDocument(doc: ReceiptEvidenceDoc): string {
  return base64url(utf8(JSON.stringify(doc)));
}

/** What verifying either form of receipt trusts: the key set, the receipts log's verifier keys, optionally witnesses. */
export interface ReceiptTrust {
  keys: KeyLookup;
  /** Note verifier keys of the receipts log (current first); a document proven under another log is refused. */
  logKeys: readonly string[];
  witnesses?: WitnessPolicy;
  requireQuorum?: boolean;
}

/**
 * Verifies a receipt in either form, offline: a compact JWS (its signature), or
 * a self-contained receipt document (checkpoint signature, inclusion, leaf,
 * and with a policy its cosignatures). The payload is returned only when every
 * check holds.
 */
export async function verifyReceiptToken(token: string, trust: ReceiptTrust): Promise<ReceiptCheck> {
  const t = token.trim();
  if (t.split('.').length === 3 && !t.startsWith('{')) return verifyReceiptJws(trust.keys, t);
  const doc = parseReceiptDocument(t);
  if (!doc)
    return { valid: false, reason: 'malformed', detail: 'neither a compact JWS nor a receipt document (its JSON, or base64url of it)' };
  let checks: Record<string, Check> = {};
  for (const logKey of trust.logKeys) {
    checks = await verifyReceiptEvidence(doc, {
      keys: trust.keys,
      logKey,
      ...(trust.witnesses ? { witnesses: trust.witnesses } : {}),
      ...(trust.requireQuorum ? { requireQuorum: true } : {}),
    });
    if (checks.checkpoint?.ok) break;
  }
  const failed = Object.entries(checks).find(([, c]) => !c.ok);
  if (failed || trust.logKeys.length === 0)
    return {
      valid: false,
      reason: `bad_${failed?.[0] ?? 'checkpoint'}`,
      detail: failed?.[1].detail ?? 'no receipts log key to check the checkpoint with',
    };
  return { valid: true, kid: 'checkpoint', payload: doc.payload };
}

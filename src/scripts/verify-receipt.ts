/**
 * What the /verify page proves, computed in the browser from the service's
 * published keys and a receipt's evidence (GET /v1/receipts/{id}), with the
 * crypto core the server runs (src/crypto: notes, JWS, RFC 9162 proofs,
 * cosignatures), so these are the checks of verifyReceiptEvidence in
 * src/crypto/receipt.ts, with the keys and the witness policy taken from the
 * service's published documents rather than from the answer:
 *  1. the pasted token's signature (receipt JWS against /crypto/public-key,
 *     pre-finality JWT against /.well-known/prefinality-jwks.json);
 *  2. the checkpoint note's Ed25519 signature by a key derived here from the
 *     published public key (never the one the answer sends), and the
 *     checkpoint JWS, which must sign exactly the checkpoint body;
 *  3. leafHash(leaf) and the RFC 9162 inclusion proof to the checkpoint root;
 *  4. for a token receipt (execute-gate, absence witness): its JWS, and that
 *     the leaf is that JWS;
 *  5. that the leaf parses to the payload shown, with the receipt id asked for
 *     (a batch-sealed receipt's leaf is the canonical JSON of its payload);
 *  6. the witnesses' cosignatures on the checkpoint, with the witness policy
 *     published at /api/v1/logs/receipts: who cosigned, whether the quorum holds.
 * A pasted receipt document (the evidence JSON, or its base64url as sent in
 * Gate-Receipt) is checked as it is, without asking the service for it.
 * Nothing here trusts a verdict of the server.
 */
import { base64, fromBase64 } from '../crypto/base64.ts';
import { utf8 } from '../crypto/bytes.ts';
import { canonicalJson } from '../crypto/canonical.ts';
import { checkCompactJws, decodeJws, jwkKeyLookup, looksLikeJws, type PublicJwk } from '../crypto/jws-verify.ts';
import { leafHash, verifyInclusion } from '../crypto/merkle.ts';
import { noteOrigin } from '../crypto/note.ts';
import { ProofError } from '../crypto/proof-error.ts';
import {
  CHECKPOINT_TYP,
  parseReceiptDocument,
  PREFINALITY_TYP,
  RECEIPT_TYP,
  liveOrTest,
  type ReceiptEvidenceDoc,
} from '../crypto/receipt.ts';
import { parseWitnessPolicy, witnessesOf, type Witnessed } from '../crypto/witness-policy.ts';
import { openCheckpoint, publishedKeys } from './published-keys.ts';

export const RECEIPT_ID = /^rcpt_[A-Za-z0-9_-]{1,60}$/;

export interface Finding {
  check: string;
  ok: boolean;
  detail: string;
}

export interface Report {
  proven: boolean;
  summary: string;
  findings: Finding[];
  payload?: Record<string, unknown>;
}

/** The evidence of GET /v1/receipts/{id}; `leaf` and `checkpoint_jws` may be absent on older servers. */
type Evidence = Omit<ReceiptEvidenceDoc, 'leaf'> & { leaf?: string };

async function getJson<T>(base: string, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(base + path, { headers: { accept: 'application/json' } });
  return { status: res.status, body: (await res.json()) as T };
}

const say = (findings: Finding[], check: string, ok: boolean, detail: string) => findings.push({ check, ok, detail });

async function attempt(findings: Finding[], check: string, fn: () => Promise<string>): Promise<boolean> {
  try {
    say(findings, check, true, await fn());
    return true;
  } catch (e) {
    say(findings, check, false, e instanceof ProofError ? e.message : `could not check: ${String((e as Error).message ?? e)}`);
    return false;
  }
}

export async function verifyReceipt(input: string, base: string): Promise<Report> {
  const text = input.trim();
  const findings: Finding[] = [];
  const keys = await publishedKeys(base);
  const jwks = jwkKeyLookup(keys.map((k) => k.jwk));
  let id: string | undefined;
  let pasted: { kind: 'receipt' | 'prefinality'; payload: Record<string, unknown> } | undefined;
  const doc = parseReceiptDocument(text);

  if (doc) {
    id = String(doc.payload.receipt_id ?? '');
    if (!RECEIPT_ID.test(id)) return refuse(findings, 'Receipt document', 'the document names no receipt');
  } else if (looksLikeJws(text)) {
    let typ: unknown;
    try {
      typ = decodeJws(text).header.typ;
    } catch (e) {
      return refuse(findings, 'Token', (e as Error).message);
    }
    if (typ === PREFINALITY_TYP) {
      const set = jwkKeyLookup((await getJson<{ keys: PublicJwk[] }>(base, '/.well-known/prefinality-jwks.json')).body.keys);
      const ok = await attempt(findings, 'Pre-finality signature', async () => {
        const v = await checkCompactJws(text, set, PREFINALITY_TYP);
        pasted = { kind: 'prefinality', payload: decodeJws(text).payload };
        return `signed by the service's key ${v.kid} (published in /.well-known/prefinality-jwks.json)`;
      });
      if (!ok) return finish(findings);
      const exp = Number(pasted!.payload.exp);
      say(
        findings,
        'Validity',
        exp * 1000 > Date.now(),
        exp * 1000 > Date.now()
          ? `the clearance is valid until ${new Date(exp * 1000).toISOString()}`
          : `the clearance expired at ${new Date(exp * 1000).toISOString()}: it proves a past decision, it clears nothing now`,
      );
    } else {
      const ok = await attempt(findings, 'Receipt signature', async () => {
        const v = await checkCompactJws(text, jwks, RECEIPT_TYP);
        pasted = { kind: 'receipt', payload: decodeJws(text).payload };
        return `signed by the service's Ed25519 key ${v.kid} (published at /crypto/public-key)`;
      });
      if (!ok) return finish(findings);
    }
    id = String(pasted!.payload.receipt_id ?? '');
    if (!RECEIPT_ID.test(id)) return refuse(findings, 'Receipt id', 'the token names no receipt in the receipts log');
  } else if (RECEIPT_ID.test(text)) {
    id = text;
  } else {
    return refuse(findings, 'Input', 'paste a receipt (compact JWS), a pre-finality JWT, or a receipt id such as rcpt_…');
  }

  let ev: Evidence;
  if (doc) {
    ev = doc;
  } else {
    const res = await getJson<Evidence>(base, `/v1/receipts/${encodeURIComponent(id)}`);
    if (res.status === 404) return refuse(findings, 'Receipts log', `the service has no receipt ${id}`);
    if (res.status !== 200) return refuse(findings, 'Receipts log', `the service answered ${res.status}`);
    ev = res.body;
  }
  const leaf = ev.leaf ?? ev.receipt ?? '';
  const origin = ev.log.origin ?? noteOrigin(ev.checkpoint);
  // A token receipt's leaf is its JWS; a batch-sealed receipt has none and its leaf is the canonical JSON payload.
  const token = pasted?.kind === 'receipt' ? text : ev.receipt;

  // 2. The checkpoint: its note signed by a key derived here from the published
  // public keys, and its JWS (the same body, signed by a published key) when present.
  let root: Uint8Array | undefined;
  await attempt(findings, 'Signed checkpoint', async () => {
    const cp = await openCheckpoint(ev.checkpoint, origin, keys);
    if (cp.size !== ev.inclusion.tree_size)
      throw new ProofError(`the checkpoint is of size ${cp.size}, the proof of size ${ev.inclusion.tree_size}`);
    let jwsSaid = '';
    if (ev.checkpoint_jws) {
      const v = await checkCompactJws(ev.checkpoint_jws, jwks, CHECKPOINT_TYP);
      if (v.jws.payloadText !== cp.body) throw new ProofError('the checkpoint JWS does not sign this checkpoint');
      jwsSaid = `; its JWS is signed by the service's key ${v.kid}`;
    }
    root = cp.root;
    return `log ${origin} at size ${cp.size}, root ${base64(cp.root)}, note signed by ${cp.verifierKey.split('+').slice(0, 2).join('+')}${jwsSaid}`;
  });

  // 3. The leaf is in that tree.
  await attempt(findings, 'Inclusion', async () => {
    if (!root) throw new ProofError('there is no verified checkpoint to prove against');
    const lh = leafHash(utf8(leaf));
    if (base64(lh) !== ev.inclusion.leaf_hash) throw new ProofError('the leaf does not hash to the proven leaf hash');
    verifyInclusion(ev.log.index, ev.inclusion.tree_size, lh, ev.inclusion.hashes.map(fromBase64), root);
    return `entry ${ev.log.index} of ${ev.inclusion.tree_size}: the ${ev.inclusion.hashes.length}-hash RFC 9162 proof leads to the checkpoint root`;
  });

  // 6. The witnesses, with the policy the service publishes for the log (not the one in this answer).
  const log = await getJson<{ witnessing?: { policy: string } }>(base, `/api/v1/logs/${encodeURIComponent(ev.log.name)}`);
  let witnessed: Witnessed | undefined;
  if (log.status === 200 && log.body.witnessing) {
    const policyText = log.body.witnessing.policy;
    await attempt(findings, 'Witnesses', async () => {
      witnessed = await witnessesOf(ev.checkpoint.replace(/\r\n/g, '\n'), parseWitnessPolicy(policyText));
      const who = witnessed.cosigned_by.length ? `cosigned by ${witnessed.cosigned_by.join(', ')}` : 'cosigned by no witness yet';
      const quorum =
        witnessed.quorum === null
          ? 'the policy requires no quorum'
          : `quorum ${witnessed.quorum} ${witnessed.quorum_holds ? 'holds' : 'does NOT hold yet: only the log vouches for this checkpoint'}`;
      return `${who} (C2SP cosignatures, checked here); ${quorum}`;
    });
  }

  // 4. A token receipt: its own signature (unless already checked as pasted).
  if (ev.receipt && pasted?.kind !== 'receipt') {
    await attempt(findings, 'Receipt signature', async () => {
      const v = await checkCompactJws(ev.receipt!, jwks, RECEIPT_TYP);
      return `signed by the service's Ed25519 key ${v.kid} (published at /crypto/public-key)`;
    });
  }

  // 5. The proven leaf is this receipt: the JWS itself for a token, the canonical payload for a sealed one.
  await attempt(findings, 'Leaf and payload', async () => {
    if (token !== null && leaf !== token)
      throw new ProofError(
        pasted?.kind === 'receipt' ? 'the logged leaf is not the receipt you pasted' : 'the logged leaf is not the receipt JWS',
      );
    let inLeaf: Record<string, unknown>;
    try {
      inLeaf = token !== null ? decodeJws(leaf).payload : (JSON.parse(leaf) as Record<string, unknown>);
    } catch {
      throw new ProofError(token !== null ? 'the leaf is not a JWS' : 'the leaf is not JSON');
    }
    if (canonicalJson(inLeaf) !== canonicalJson(ev.payload)) throw new ProofError('the logged leaf does not carry the payload shown');
    if (inLeaf.receipt_id !== id) throw new ProofError(`the logged leaf is receipt ${String(inLeaf.receipt_id)}, not ${id}`);
    if (pasted?.kind === 'prefinality' && (inLeaf.kind !== 'prefinality' || inLeaf.decision !== pasted.payload.decision)) {
      throw new ProofError('the logged receipt does not record this pre-finality decision');
    }
    const how = token !== null ? 'the signed receipt' : 'the canonical JSON of the payload (a batch-sealed receipt)';
    return `the logged leaf is ${how}, receipt ${id}${pasted ? ', the one your token names' : ''}`;
  });

  // 7. Live or test (docs/test-mode.md): a receipt claiming "test" is proven in the test log only, any other in the receipts log only.
  await attempt(findings, 'Live or test', async () => liveOrTest(ev.payload, origin));
  return finish(findings, ev.payload, ev, token !== null, witnessed);
}

function refuse(findings: Finding[], check: string, detail: string): Report {
  say(findings, check, false, detail);
  return finish(findings);
}

/** When the receipt was issued: `issued_at` (RFC 3339), else `iat` (NumericDate seconds, or RFC 3339 on older receipts). */
function issuedAt(payload: Record<string, unknown>): string {
  if (typeof payload.issued_at === 'string') return payload.issued_at;
  return typeof payload.iat === 'number' ? new Date(payload.iat * 1000).toISOString() : String(payload.iat ?? '');
}

function finish(
  findings: Finding[],
  payload?: Record<string, unknown>,
  ev?: Evidence,
  signed = false,
  witnessed?: { cosigned_by: string[]; quorum_holds: boolean },
): Report {
  const failed = findings.filter((f) => !f.ok);
  const proven = failed.length === 0 && ev !== undefined && payload !== undefined;
  if (!proven) {
    return {
      proven,
      summary: `Not proven: ${failed[0]?.check.toLowerCase() ?? 'the checks'}: ${failed[0]?.detail ?? 'incomplete'}.`,
      findings,
      ...(payload ? { payload } : {}),
    };
  }
  const what = `${String(payload.kind ?? 'act')} ${String(payload.decision ?? '')}`.trim();
  const about = `${what}${payload.subject ? ` for ${String(payload.subject)}` : ''}, issued ${issuedAt(payload)}`;
  const test = payload.test === true;
  const entry = `entry ${ev.log.index} of the public ${test ? 'test log' : 'receipts log'}, committed to by a checkpoint of ${ev.inclusion.tree_size} entries signed with the published key`;
  const summary = `${test ? 'Test receipt (billed nothing, not a live receipt). ' : ''}${
    signed
      ? `Proven: Fuse Gate signed this receipt (${about}), and it is ${entry}. `
      : `Proven: Fuse Gate logged this receipt (${about}) in a signed batch: its payload is ${entry}. `
  }`;
  const witnesses = witnessed
    ? witnessed.quorum_holds
      ? `Its witnesses (${witnessed.cosigned_by.join(', ')}) cosigned that checkpoint: the log cannot show anyone a different history without them noticing. `
      : 'The witness quorum has not cosigned that checkpoint yet. '
    : '';
  return {
    proven,
    summary: summary + witnesses + 'Keep the checkpoint: the log can only grow from it (check it on the logs page).',
    findings,
    payload,
  };
}

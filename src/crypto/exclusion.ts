/**
 * PAS exclusion proofs: that a job has NO redeemed spend leaf (or that it
 * has one), over the sparse Merkle tree of a key's redeemed jobs
 * (src/crypto/sparse-merkle.ts, keyed by SHA-256 of the UTF-8 job id),
 * against a head that the service signs as a C2SP checkpoint note (origin,
 * size, base64 root). docs/exclusion-proofs.md says how to check one by hand.
 *
 * `verifyExclusionProof` needs only the service's Ed25519 public key (or the
 * note verifier key) and the answer of GET /v1/pas/exclusion.
 */
import { base64 } from './base64.ts';
import { equalBytes } from './bytes.ts';
import { ProofError } from './proof-error.ts';
import { noteOrigin, openNote, parseCheckpointText, verifierKey } from './note.ts';
import { sha256 } from './platform.ts';
import { sparseProofFromJson, sparseProofToJson, verifySparseProof, type SparseProof, type SparseProofJson } from './sparse-merkle.ts';

/** The tree key of a job: SHA-256 of its UTF-8 id. */
export const jobKey = (jobId: string): Uint8Array => sha256(jobId);

/** Names the proof format in every answer; a verifier refuses any other. */
export const EXCLUSION_PROOF_FORMAT = 'sparse-merkle-sha256';

const ORIGIN_PATH = '/pas-exclusion-smt/';

/** The origin (and note key name) of a key's exclusion tree: `<SITE_URL host>/pas-exclusion-smt/<key id>`. */
export function exclusionOrigin(siteUrl: string, owner: string): string {
  return `${new URL(siteUrl).host}${ORIGIN_PATH}${owner}`;
}

export interface ExclusionProofJson {
  job_id: string;
  /** True when the job HAS a redeemed spend leaf (then `proof` proves its inclusion). */
  present: boolean;
  excluded: boolean;
  proof: { format: string; key: string } & SparseProofJson;
  checkpoint: { origin: string; tree_size: number; root_hash: string; note: string };
}

export function exclusionProofJson(jobId: string, proof: SparseProof, checkpoint: ExclusionProofJson['checkpoint']): ExclusionProofJson {
  const key = jobKey(jobId);
  const present = proof.leaf !== null && equalBytes(proof.leaf, key);
  return {
    job_id: jobId,
    present,
    excluded: !present,
    proof: { format: EXCLUSION_PROOF_FORMAT, key: base64(key), ...sparseProofToJson(proof) },
    checkpoint,
  };
}

export interface VerifiedExclusion {
  /** True: the job has a redeemed spend leaf; false: it is proven to have none. */
  present: boolean;
  size: number;
  origin: string;
}

/**
 * Checks an exclusion (or inclusion) proof for `jobId`. `trust` is the
 * service's raw Ed25519 public key (32 bytes) or a note verifier key string;
 * `expectedOrigin`, when given, pins whose tree it is. Rejects with a
 * ProofError when anything does not hold; never trusts the answer's own
 * `present`, `key`, `tree_size` or `root_hash` fields.
 */
export async function verifyExclusionProof(
  jobId: string,
  answer: ExclusionProofJson,
  trust: Uint8Array | string,
  expectedOrigin?: string,
): Promise<VerifiedExclusion> {
  const note = answer.checkpoint?.note;
  if (typeof note !== 'string') throw new ProofError('no signed checkpoint');
  const origin = noteOrigin(note);
  // The service signs other notes with the same key (log checkpoints): only an exclusion tree's head will do.
  if (!origin.includes(ORIGIN_PATH)) throw new ProofError(`checkpoint origin ${origin} is not an exclusion tree`);
  if (expectedOrigin !== undefined && origin !== expectedOrigin)
    throw new ProofError(`checkpoint origin is ${origin}, expected ${expectedOrigin}`);
  const vkey = typeof trust === 'string' ? trust : verifierKey(origin, trust);
  const head = parseCheckpointText(await openNote(note, vkey));
  if (head.origin !== origin) throw new ProofError('checkpoint origin mismatch');
  if (answer.job_id !== undefined && answer.job_id !== jobId) throw new ProofError('the proof is for another job');
  if (answer.proof?.format !== EXCLUSION_PROOF_FORMAT) throw new ProofError(`proof format is not ${EXCLUSION_PROOF_FORMAT}`);
  const present = verifySparseProof(jobKey(jobId), sparseProofFromJson(answer.proof), head.root);
  if (answer.present !== undefined && answer.present !== present) throw new ProofError('the answer misstates presence');
  return { present, size: head.size, origin };
}

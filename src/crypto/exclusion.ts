/**
 * PAS exclusion proofs: that a job has NO redeemed spend leaf (or its
 * inclusion when it has one), over the sorted Merkle tree of a key's redeemed
 * job ids (src/crypto/sorted-merkle.ts: two adjacent leaves around the job,
 * each with its RFC 9162 inclusion proof), against a tree head that the
 * service signs as a C2SP checkpoint note (origin, size, base64 root).
 *
 * Leaves are the UTF-8 bytes of the job ids, ordered byte-wise.
 * `verifyExclusionProof` needs only the service's Ed25519 public key (or the
 * note verifier key) and the answer of GET /v1/pas/exclusion.
 */
import { ProofError } from './merkle.ts';
import { openNote, parseCheckpointText, verifierKey } from './note.ts';
import { proofFromJson, proofToJson, verifySortedProof, type SortedProof, type SortedProofJson } from './sorted-merkle.ts';

const utf8 = new TextEncoder();
const fromUtf8 = (b: Uint8Array) => new TextDecoder().decode(b);

export const jobKey = (jobId: string): Uint8Array => utf8.encode(jobId);

/** The origin (and note key name) of a key's exclusion tree: `<SITE_URL host>/pas-exclusion/<key id>`. */
export function exclusionOrigin(siteUrl: string, owner: string): string {
  return `${new URL(siteUrl).host}/pas-exclusion/${owner}`;
}

export interface ExclusionProofJson {
  job_id: string;
  /** True when the job HAS a redeemed spend leaf (then `proof` proves its inclusion). */
  present: boolean;
  excluded: boolean;
  proof: SortedProofJson;
  checkpoint: { origin: string; tree_size: number; root_hash: string; note: string };
}

export function exclusionProofJson(jobId: string, proof: SortedProof, checkpoint: ExclusionProofJson['checkpoint']): ExclusionProofJson {
  return { job_id: jobId, present: proof.present, excluded: !proof.present, proof: proofToJson(proof, fromUtf8), checkpoint };
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
 * `expectedOrigin`, when given, pins whose tree it is. Throws ProofError (or a
 * note error) when anything does not hold; never trusts the answer's own
 * `present`, `tree_size` or `root_hash` fields.
 */
export function verifyExclusionProof(jobId: string, answer: ExclusionProofJson, trust: Uint8Array | string, expectedOrigin?: string): VerifiedExclusion {
  const note = answer.checkpoint?.note;
  if (typeof note !== 'string') throw new ProofError('no signed checkpoint');
  const origin = note.slice(0, note.indexOf('\n'));
  if (expectedOrigin !== undefined && origin !== expectedOrigin) throw new ProofError(`checkpoint origin is ${origin}, expected ${expectedOrigin}`);
  const vkey = typeof trust === 'string' ? trust : verifierKey(origin, trust);
  const head = parseCheckpointText(openNote(note, vkey));
  if (head.origin !== origin) throw new ProofError('checkpoint origin mismatch');
  if (answer.job_id !== undefined && answer.job_id !== jobId) throw new ProofError('the proof is for another job');
  let proof: SortedProof;
  try {
    proof = proofFromJson(answer.proof, jobKey);
  } catch {
    throw new ProofError('malformed proof');
  }
  const present = verifySortedProof(jobKey(jobId), proof, { size: head.size, root: head.root });
  if (answer.present !== undefined && answer.present !== present) throw new ProofError('the answer misstates presence');
  return { present, size: head.size, origin };
}

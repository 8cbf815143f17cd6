/**
 * SCITT-style COSE for receipts: RFC 9052 COSE_Sign1 (Ed25519, alg -8 EdDSA)
 * and the IETF COSE Merkle-tree-proofs draft (draft-ietf-cose-merkle-tree-proofs)
 * with the verifiable data structure RFC9162_SHA256 (vds 1).
 *
 *  - signed statement: COSE_Sign1 over the log entry's bytes (the receipt's
 *    leaf), with kid, content type and CWT claims (iss, sub) protected;
 *  - COSE receipt: COSE_Sign1 by the log with a detached payload, protected
 *    {alg, kid, vds: 1}, unprotected {vdp: {-1 (inclusion): [bstr .cbor
 *    [tree-size, leaf-index, [+ hash]]]}}; its signature is over the Merkle
 *    root the proof leads to from SHA-256(0x00 || entry);
 *  - transparent statement: the signed statement carrying its receipt in the
 *    unprotected header 394 (receipts).
 * CBOR is written with cbor2 in core deterministic encoding (RFC 8949 4.2.1).
 */
import { cdeEncodeOptions, decode, encode, Tag } from 'cbor2';
import { utf8 } from './bytes.ts';
import { inclusionRoot, leafHash, type Hash } from './merkle.ts';
import { ProofError } from './proof-error.ts';
import { verifier, type Signer } from './platform.ts';

export const COSE_SIGN1_TAG = 18;
export const ALG_EDDSA = -8;
export const HEADER = { alg: 1, contentType: 3, kid: 4, cwtClaims: 15, receipts: 394, vds: 395, vdp: 396 } as const;
export const VDS_RFC9162_SHA256 = 1;
export const VDP_INCLUSION = -1;
export const COSE_CONTENT_TYPE = 'application/cose; cose-type="cose-sign1"';

const cbor = (v: unknown): Uint8Array => encode(v, cdeEncodeOptions);
/** A plain Uint8Array view: cbor2 writes a Node Buffer as an object, not as a byte string. */
const bytes = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

/** The bytes an RFC 9052 COSE_Sign1 signature covers (Sig_structure "Signature1", no external AAD). */
export function sigStructure(protectedBytes: Uint8Array, payload: Uint8Array): Uint8Array {
  return cbor(['Signature1', bytes(protectedBytes), new Uint8Array(0), bytes(payload)]);
}

function sign1(
  protectedHeader: Map<number, unknown>,
  unprotected: Map<number, unknown>,
  payload: Uint8Array | null,
  signed: Uint8Array,
  signer: Signer,
): Uint8Array {
  const p = cbor(protectedHeader);
  const signature = signer.sign(sigStructure(p, signed));
  return cbor(new Tag(COSE_SIGN1_TAG, [p, unprotected, payload && bytes(payload), bytes(signature)]));
}

export interface StatementInput {
  /** The log entry's exact bytes. */
  entry: Uint8Array;
  contentType: string;
  issuer: string;
  subject: string;
  kid: string;
}

export interface InclusionInput {
  treeSize: number;
  leafIndex: number;
  hashes: Hash[];
  /** The root the proof leads to (the checkpoint's). */
  root: Hash;
  kid: string;
}

/** A COSE receipt (RFC9162_SHA256 inclusion proof) signed by the log's key over the root. */
export function coseReceipt(p: InclusionInput, signer: Signer): Uint8Array {
  const proof = cbor([p.treeSize, p.leafIndex, p.hashes.map(bytes)]);
  const prot = new Map<number, unknown>([
    [HEADER.alg, ALG_EDDSA],
    [HEADER.kid, utf8(p.kid)],
    [HEADER.vds, VDS_RFC9162_SHA256],
  ]);
  const unprot = new Map<number, unknown>([[HEADER.vdp, new Map<number, unknown>([[VDP_INCLUSION, [bytes(proof)]]])]]);
  return sign1(prot, unprot, null, p.root, signer);
}

/** The transparent statement: the signed statement over the entry, with its COSE receipt(s) in header 394. */
export function transparentStatement(s: StatementInput, receipts: Uint8Array[], signer: Signer): Uint8Array {
  const prot = new Map<number, unknown>([
    [HEADER.alg, ALG_EDDSA],
    [HEADER.contentType, s.contentType],
    [HEADER.kid, utf8(s.kid)],
    [
      HEADER.cwtClaims,
      new Map<number, unknown>([
        [1, s.issuer],
        [2, s.subject],
      ]),
    ],
  ]);
  return sign1(prot, new Map<number, unknown>([[HEADER.receipts, receipts.map(bytes)]]), s.entry, s.entry, signer);
}

type Sign1 = [Uint8Array, Map<number, unknown>, Uint8Array | null, Uint8Array];

function openSign1(bytes: Uint8Array): {
  protectedBytes: Uint8Array;
  protectedHeader: Map<number, unknown>;
  unprotected: Map<number, unknown>;
  payload: Uint8Array | null;
  signature: Uint8Array;
} {
  const t = decode(bytes, { preferMap: true }) as Tag | Sign1;
  const arr = (t instanceof Tag ? (t.tag === COSE_SIGN1_TAG ? t.contents : undefined) : t) as Sign1 | undefined;
  if (!Array.isArray(arr) || arr.length !== 4) throw new ProofError('not a COSE_Sign1');
  const [protectedBytes, unprotected, payload, signature] = arr;
  const protectedHeader = decode(protectedBytes, { preferMap: true }) as Map<number, unknown>;
  if (!(protectedHeader instanceof Map) || protectedHeader.get(HEADER.alg) !== ALG_EDDSA)
    throw new ProofError('the COSE algorithm is not EdDSA (-8)');
  return { protectedBytes, protectedHeader, unprotected, payload, signature };
}

/**
 * Verifies a transparent statement with the log's raw 32-byte Ed25519 public
 * key: the statement's signature, and its first receipt's inclusion proof of
 * SHA-256(0x00 || payload) and signature over the root. Resolves to the entry,
 * its index and the tree size; rejects with a ProofError naming what fails.
 */
export async function verifyTransparentStatement(
  bytes: Uint8Array,
  publicKey: Uint8Array,
): Promise<{ entry: Uint8Array; leafIndex: number; treeSize: number; root: Hash }> {
  const st = openSign1(bytes);
  if (!st.payload) throw new ProofError('the signed statement has no payload');
  if (!(await verifier.verify(publicKey, sigStructure(st.protectedBytes, st.payload), st.signature)))
    throw new ProofError('the signed statement signature does not verify');
  const receipts = st.unprotected.get(HEADER.receipts) as Uint8Array[] | undefined;
  if (!receipts?.[0]) throw new ProofError('no receipt in header 394');
  const r = openSign1(receipts[0]);
  if (r.protectedHeader.get(HEADER.vds) !== VDS_RFC9162_SHA256) throw new ProofError('the receipt is not RFC9162_SHA256');
  const proofs = (r.unprotected.get(HEADER.vdp) as Map<number, unknown> | undefined)?.get(VDP_INCLUSION) as Uint8Array[] | undefined;
  if (!proofs?.[0]) throw new ProofError('the receipt carries no inclusion proof');
  const [treeSize, leafIndex, hashes] = decode(proofs[0]) as [number, number, Uint8Array[]];
  // The root the proof leads to from the entry is the receipt's detached payload.
  const root = inclusionRoot(leafIndex, treeSize, leafHash(st.payload), hashes);
  if (!(await verifier.verify(publicKey, sigStructure(r.protectedBytes, root), r.signature)))
    throw new ProofError('the receipt signature does not verify over the root its proof leads to');
  return { entry: st.payload, leafIndex, treeSize, root };
}

/**
 * Checks a receipt's published evidence with a second implementation (jose for
 * JWS, node:crypto for the note signature and the RFC 9162 inclusion proof,
 * none of the server's code) and returns its payload. Works for both kinds:
 * batch-sealed (leaf = canonical payload, seal JWS over the checkpoint body)
 * and self-contained (leaf = the receipt JWS).
 */
import { createHash, createPublicKey, verify } from 'node:crypto';
import { compactVerify, importJWK } from 'jose';
import type { TestServer } from './server.ts';
import type { Ledger } from '../../src/ledger/db.ts';
import type { Receipt, ReceiptInput, ReceiptIssuer } from '../../src/ledger/receipts.ts';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();

/** RFC 9162 §2.1.3.2: the root a leaf hash and its inclusion path lead to. */
function rootFromInclusion(index: number, size: number, leafHash: Buffer, path: Buffer[]): Buffer {
  if (index >= size) throw new Error('index beyond size');
  let fn = index;
  let sn = size - 1;
  let r = leafHash;
  for (const p of path) {
    if (sn === 0) throw new Error('proof too long');
    if (fn % 2 === 1 || fn === sn) {
      r = sha(Buffer.from([1]), p, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) ((fn >>= 1), (sn >>= 1));
    } else {
      r = sha(Buffer.from([1]), r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn !== 0) throw new Error('proof too short');
  return r;
}

function openNote(note: string, vkey: string): string {
  const [name, hashHex] = vkey.split('+');
  const raw = Buffer.from(vkey.slice(name!.length + hashHex!.length + 2), 'base64').subarray(1);
  const text = note.slice(0, note.indexOf('\n\n') + 1);
  const line = note
    .slice(text.length + 1)
    .trim()
    .split('\n')
    .find((l) => l.startsWith(`\u2014 ${name} `))!;
  const blob = Buffer.from(line.split(' ')[2]!, 'base64');
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
  if (!verify(null, Buffer.from(text), createPublicKey({ key: spki, format: 'der', type: 'spki' }), blob.subarray(4)))
    throw new Error('note signature');
  return text;
}

export async function verifiedReceiptPayload(s: TestServer, receiptIdOrUrl: string): Promise<Record<string, any>> {
  const path = receiptIdOrUrl.includes('/') ? new URL(receiptIdOrUrl).pathname : `/v1/receipts/${receiptIdOrUrl}`;
  const e = await (await s.fetch(path, { headers: { accept: 'application/json' } })).json();
  const pub = await (await s.fetch('/crypto/public-key')).json();
  const jwk = await importJWK(pub.jwk, 'EdDSA');
  const body = openNote(e.checkpoint, e.log.verifier_key);
  const [, size, root] = body.split('\n');
  if (Number(size) !== e.inclusion.tree_size) throw new Error('checkpoint size');
  const sealed = new TextDecoder().decode((await compactVerify(e.checkpoint_jws, jwk)).payload);
  if (sealed !== body) throw new Error('checkpoint JWS payload');
  const lh = sha(Buffer.from([0]), Buffer.from(e.leaf, 'utf8'));
  if (lh.toString('base64') !== e.inclusion.leaf_hash) throw new Error('leaf hash');
  const got = rootFromInclusion(
    e.log.index,
    Number(size),
    lh,
    e.inclusion.hashes.map((h: string) => Buffer.from(h, 'base64')),
  );
  if (got.toString('base64') !== root) throw new Error('inclusion');
  if (e.receipt) {
    if (e.leaf !== e.receipt) throw new Error('leaf is not the receipt');
    return JSON.parse(new TextDecoder().decode((await compactVerify(e.receipt, jwk)).payload));
  }
  const payload = JSON.parse(e.leaf);
  if (JSON.stringify(payload) !== JSON.stringify(sortKeys(e.payload))) throw new Error('leaf is not the payload');
  return payload;
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** Commits one act per input, queued together (one batch when they fit), each minting its receipt under the lock. */
export function commitReceipts(
  ledger: Pick<Ledger, 'act'>,
  issuer: ReceiptIssuer,
  inputs: readonly ReceiptInput[],
  opts: { signed?: boolean } = {},
): Promise<Receipt[]> {
  return Promise.all(
    inputs.map((input) =>
      ledger.act<Receipt>({
        needs: {},
        decide: (state) => {
          const receipt = state.receipt(issuer, input, { signed: opts.signed ?? false });
          return { writes: { receipt }, result: receipt };
        },
      }),
    ),
  );
}

/**
 * The published vectors of test/vectors/ (RFC 6962/9162 Merkle proofs, C2SP
 * signed notes, tlog-tiles, tlog-cosignature) and tokens signed by a second
 * implementation (node:crypto, in Node), run against the crypto core. It
 * imports nothing but src/crypto and uses no Node API, so the same file runs
 * in Node and, bundled for the browser, in Chromium (test/browser-tlog.test.ts);
 * both must report the same results.
 */
import { base64, fromBase64 } from '../../src/crypto/base64.ts';
import { concatBytes, equalBytes, toHex, utf8 } from '../../src/crypto/bytes.ts';
import { cosignersOf, parseCosignerKey, verifyCosignature } from '../../src/crypto/cosignature.ts';
import { jwkKeyLookup, verifyCompactJws, type PublicJwk } from '../../src/crypto/jws-verify.ts';
import {
  foldRange,
  leafHash,
  proveConsistency,
  proveInclusion,
  rangeNodes,
  rootOf,
  verifyConsistency,
  verifyInclusion,
  type Hash,
  type LeafRange,
} from '../../src/crypto/merkle.ts';
import { openNote, parseCheckpointText, parseVerifierKey, verifierKey } from '../../src/crypto/note.ts';
import { sha256 } from '../../src/crypto/platform.ts';
import {
  bundlePath,
  EMPTY_EDGE,
  edgeRoot,
  encodeBundle,
  extendEdge,
  TILE_HEIGHT,
  tilePath,
  tileWidth,
  type Edge,
} from '../../src/crypto/tiles.ts';

type Probe = Record<string, unknown> & { wantErr?: boolean };

/** test/vectors/ as read by the caller, and what Node signed for this run. */
export interface CoreVectorData {
  reference: { leafInputsHex: string[]; leafHashesHex: string[]; rootHashesHexByTreeSize: Record<string, string> };
  inclusion: Array<{ file: string; probe: Probe }>;
  consistency: Array<{ file: string; probe: Probe }>;
  notes: Array<Record<string, string>>;
  witness: {
    witness_name: string;
    witness_vkey: string;
    log_vkey: string;
    checkpoint: string;
    timestamp: number;
    cosignature_line: string;
    cosigned_checkpoint: string;
    add_checkpoint_old_size: number;
    consistency_proof_base64: string[];
  };
  tiles: {
    origin: string;
    log_vkey: string;
    entries_base64: string[];
    sizes: Record<
      string,
      { root: string; checkpoint: string; tiles_sha256: Record<string, string>; bundles_sha256: Record<string, string> }
    >;
    tiles_1000_base64: Record<string, string>;
  };
  /** Signed in Node with node:crypto (OpenSSL), by a key made for the run. */
  signed: {
    raw: string;
    origin: string;
    note: string;
    jwk: PublicJwk;
    jws: string;
    typ: string;
    cosignerVkey: string;
    cosignedNote: string;
  };
}

export interface VectorResult {
  name: string;
  ok: boolean;
  detail: string;
}

const fromHex = (hex: string): Uint8Array => Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16));
const b64 = (s: unknown): Uint8Array => (typeof s === 'string' && s ? fromBase64(s) : new Uint8Array());

function expectEqual(got: unknown, want: unknown, what: string): void {
  if (got !== want) throw new Error(`${what}: got ${String(got)}, want ${String(want)}`);
}

async function rejects(run: () => unknown, what: string): Promise<void> {
  try {
    await run();
  } catch {
    return;
  }
  throw new Error(`${what} was accepted`);
}

/** Every vector of `d`, each one result (ok when the core behaves as the vector says). */
export async function runCoreVectors(d: CoreVectorData): Promise<VectorResult[]> {
  const results: VectorResult[] = [];
  const check = async (name: string, run: () => unknown): Promise<void> => {
    try {
      const detail = await run();
      results.push({ name, ok: true, detail: typeof detail === 'string' ? detail : '' });
    } catch (e) {
      results.push({ name, ok: false, detail: (e as Error).message });
    }
  };

  // RFC 6962 reference tree: leaf hashes, every root, and proofs made and verified for every pair.
  const leaves = d.reference.leafInputsHex.map((h) => leafHash(fromHex(h)));
  await check('rfc6962 reference: leaf hashes and the roots of sizes 0..8', () => {
    leaves.forEach((l, i) => expectEqual(toHex(l), d.reference.leafHashesHex[i], `leaf hash ${i}`));
    for (let n = 0; n <= 8; n++)
      expectEqual(toHex(rootOf(leaves.slice(0, n))), d.reference.rootHashesHexByTreeSize[String(n)], `root ${n}`);
  });
  const mth = (all: Hash[]) => (ranges: LeafRange[]) =>
    ranges.map((r) =>
      foldRange(rangeNodes(r.lo, r.hi).map((node) => rootOf(all.slice(node.index * 2 ** node.level, (node.index + 1) * 2 ** node.level)))),
    );
  await check('rfc6962 reference: inclusion and consistency proofs of every pair verify', () => {
    for (let n = 1; n <= 8; n++) {
      const root = rootOf(leaves.slice(0, n));
      for (let m = 0; m < n; m++) verifyInclusion(m, n, leaves[m]!, mth(leaves)(proveInclusion(m, n)), root);
      for (let m = 1; m <= n; m++) verifyConsistency(m, n, mth(leaves)(proveConsistency(m, n)), rootOf(leaves.slice(0, m)), root);
    }
  });
  await check('generated trees up to 40 leaves: every proof verifies, a moved index or a forged root fails', async () => {
    const many = Array.from({ length: 40 }, (_, i) => leafHash(utf8(`leaf ${i}`)));
    for (let n = 1; n <= 40; n += 3) {
      const root = rootOf(many.slice(0, n));
      for (let m = 0; m < n; m++) {
        const proof = mth(many)(proveInclusion(m, n));
        verifyInclusion(m, n, many[m]!, proof, root);
        if (n > 1) await rejects(() => verifyInclusion((m + 1) % n, n, many[m]!, proof, root), `leaf ${m} of ${n} at another index`);
      }
      for (let m = 1; m < n; m++) {
        const older = rootOf(many.slice(0, m));
        const forged = Uint8Array.from(older);
        forged[0]! ^= 1;
        verifyConsistency(m, n, mth(many)(proveConsistency(m, n)), older, root);
        await rejects(() => verifyConsistency(m, n, mth(many)(proveConsistency(m, n)), forged, root), `a forged root of size ${m}`);
      }
    }
  });

  // transparency-dev/merkle probes: each must verify, or fail where it says wantErr.
  for (const [kind, probes] of [
    ['inclusion', d.inclusion],
    ['consistency', d.consistency],
  ] as const) {
    await check(`transparency-dev ${kind} probes (${probes.length})`, () => {
      for (const { file, probe: v } of probes) {
        const proof = ((v.proof as string[] | null) ?? []).map(b64);
        const run =
          kind === 'inclusion'
            ? () => verifyInclusion(v.leafIdx as number, v.treeSize as number, b64(v.leafHash), proof, b64(v.root))
            : () => verifyConsistency(v.size1 as number, v.size2 as number, proof, b64(v.root1), b64(v.root2));
        let failed = false;
        try {
          run();
        } catch {
          failed = true;
        }
        if (failed !== Boolean(v.wantErr)) throw new Error(`${file}: ${failed ? 'refused' : 'accepted'}, wantErr ${Boolean(v.wantErr)}`);
      }
      return `${probes.length} probes`;
    });
  }

  // C2SP signed-note and Go sumdb/note vectors.
  await check('signed notes: the C2SP and Go vectors open, a bad key and a changed text are refused, a tree note parses', async () => {
    const valid = d.notes.filter((v) => v.expect === 'valid');
    if (valid.length < 3) throw new Error('fewer than 3 valid notes');
    for (const v of valid) expectEqual(await openNote(v.note!, v.vkey!), v.note!.slice(0, v.note!.lastIndexOf('\n\n') + 1), v.vkey!);
    for (const v of d.notes.filter((x) => x.expect?.startsWith('reject vkey'))) await rejects(() => parseVerifierKey(v.vkey!), v.vkey!);
    await rejects(() => openNote(valid[0]!.note!.replace('example', 'exampel'), valid[0]!.vkey!), 'a changed note');
    expectEqual(parseCheckpointText(d.notes.find((v) => v.text)!.text!).size, 123456789012, 'tree note size');
  });

  // C2SP tlog-tiles: the tiles, bundles, roots and signed checkpoints of a 1000-entry log.
  const entries = d.tiles.entries_base64.map(b64);
  const hashes = entries.map((e) => leafHash(e));
  const edges: Edge[] = [EMPTY_EDGE];
  /** Node hashes by level, then index: what the hash tiles hold. */
  const nodes: Hash[][] = [hashes];
  for (const h of hashes) {
    const { edge, completed } = extendEdge(edges[edges.length - 1]!, h);
    edges.push(edge);
    for (const c of completed) (nodes[c.level] ??= [])[c.index] = c.hash;
  }
  const tileBytes = (level: number, n: number, width: number) =>
    concatBytes(...nodes[level * TILE_HEIGHT]!.slice(n * 256, n * 256 + width));
  for (const [size, want] of Object.entries(d.tiles.sizes)) {
    const s = Number(size);
    await check(`tlog-tiles at size ${s}: root, signed checkpoint, every hash tile and bundle`, async () => {
      expectEqual(base64(edgeRoot(edges[s]!)!), want.root, 'root');
      const cp = parseCheckpointText(await openNote(want.checkpoint, d.tiles.log_vkey));
      expectEqual(`${cp.origin} ${cp.size} ${base64(cp.root)}`, `${d.tiles.origin} ${s} ${want.root}`, 'checkpoint');
      const tiles: Record<string, string> = {};
      for (let level = 0; tileWidth(level, 0, s) > 0; level++) {
        for (let n = 0; tileWidth(level, n, s) > 0; n++)
          tiles[tilePath(level, n, tileWidth(level, n, s))] = toHex(sha256(tileBytes(level, n, tileWidth(level, n, s))));
      }
      expectEqual(JSON.stringify(tiles), JSON.stringify(want.tiles_sha256), 'hash tiles');
      const bundles: Record<string, string> = {};
      for (let n = 0; tileWidth(0, n, s) > 0; n++) {
        const w = tileWidth(0, n, s);
        bundles[bundlePath(n, w)] = toHex(sha256(encodeBundle(entries.slice(n * 256, n * 256 + w))));
      }
      expectEqual(JSON.stringify(bundles), JSON.stringify(want.bundles_sha256), 'bundles');
    });
  }
  await check('tlog-tiles: the tile bytes of size 1000', () => {
    for (const [path, bytes] of Object.entries(d.tiles.tiles_1000_base64)) {
      const [, level, n, width] = /^tile\/(\d+)\/(\d+)(?:\.p\/(\d+))?$/.exec(path)!;
      expectEqual(base64(tileBytes(Number(level), Number(n), width ? Number(width) : 256)), bytes, path);
    }
  });

  // C2SP tlog-cosignature, over the 1000-entry checkpoint, and the add-checkpoint consistency proof from 257.
  const w = d.witness;
  await check('tlog-cosignature: the vector cosignature verifies, a tampered one and a note key are refused', async () => {
    const key = parseCosignerKey(w.witness_vkey);
    const body = w.checkpoint.slice(0, w.checkpoint.lastIndexOf('\n\n') + 1);
    expectEqual(await verifyCosignature(body, w.cosignature_line, key), w.timestamp, 'timestamp');
    expectEqual(
      JSON.stringify(await cosignersOf(w.cosigned_checkpoint, [key])),
      JSON.stringify([{ name: w.witness_name, vkey: w.witness_vkey, timestamp: w.timestamp }]),
      'cosigners',
    );
    expectEqual((await cosignersOf(w.checkpoint, [key])).length, 0, "the log's own line");
    const blob = fromBase64(w.cosignature_line.split(' ')[2]!.trim());
    blob[40]! ^= 1;
    await rejects(() => verifyCosignature(body, `\u2014 ${w.witness_name} ${base64(blob)}\n`, key), 'a tampered cosignature');
    await rejects(
      () => verifyCosignature(body.replace('\n1000\n', '\n1001\n'), w.cosignature_line, key),
      'a cosignature of another checkpoint',
    );
    await rejects(() => parseCosignerKey(w.log_vkey), 'a note key as a cosigner key');
  });
  await check('tlog-witness: the add-checkpoint consistency proof leads from size 257 to 1000', () => {
    verifyConsistency(
      w.add_checkpoint_old_size,
      1000,
      w.consistency_proof_base64.map(b64),
      b64(d.tiles.sizes['257']!.root),
      b64(d.tiles.sizes['1000']!.root),
    );
  });

  // Signed in Node by node:crypto: a note, a JWS and a cosignature, each checked, and refused once changed.
  const sg = d.signed;
  await check('a note, a JWS and a cosignature signed by node:crypto verify; changed, they are refused', async () => {
    const vkey = verifierKey(sg.origin, b64(sg.raw));
    const text = await openNote(sg.note, vkey);
    expectEqual(parseCheckpointText(text).origin, sg.origin, 'note origin');
    await rejects(() => openNote(sg.note.replace(/\n\d+\n/, '\n999\n'), vkey), 'a changed note');
    const keys = jwkKeyLookup([sg.jwk]);
    const good = await verifyCompactJws(sg.jws, keys, sg.typ);
    expectEqual(good.valid, true, 'the JWS');
    const [h, p, s] = sg.jws.split('.') as [string, string, string];
    const flipped = await verifyCompactJws(`${h}.${p}.${s.startsWith('A') ? 'B' : 'A'}${s.slice(1)}`, keys, sg.typ);
    expectEqual(flipped.valid ? 'valid' : flipped.reason, 'bad_signature', 'a flipped signature');
    expectEqual((await verifyCompactJws(sg.jws, keys, 'other+jws')).valid, false, 'another typ');
    const cosigner = parseCosignerKey(sg.cosignerVkey);
    expectEqual((await cosignersOf(sg.cosignedNote, [cosigner])).length, 1, 'the cosigner');
    if (!equalBytes(cosigner.raw, b64(sg.raw))) throw new Error('the cosigner key is not the signing key');
  });
  return results;
}

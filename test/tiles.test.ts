/**
 * Logs stored and served as C2SP tlog-tiles (issue 26).
 *
 * The tile client here is written from the C2SP tlog-tiles, tlog-checkpoint and
 * signed-note texts, not from the server's code: it imports nothing from src/
 * and reads a log with only its tiles prefix and verifier key, as a stranger's
 * client (Go's sumdb/tlog TileHashReader, say) would. It is first checked
 * against independent vectors (test/vectors/c2sp-tiles.json, read back by Go's
 * TileHashReader), then pointed at every public log of a real server.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { loadConfig } from '../src/config.ts';
import { leafHash, proveInclusion, rootOf, verifyConsistency, verifyInclusion } from '../src/crypto/merkle.ts';
import { EMPTY_EDGE, extendEdge, inclusionFrom, leafHashReader, parseTilePath, tilePath, type Edge } from '../src/crypto/tiles.ts';
import { openLedger, type Ledger } from '../src/ledger/db.ts';
import {
  appendLeaves,
  consistencyProof,
  inclusionProof,
  PendingAppend,
  readBundle,
  readHashTile,
  treeHead,
  writeAppend,
} from '../src/ledger/log.ts';
import { startTestServer, tempDir, testEnv, type TestServer } from './support/server.ts';
import { indexPath, readTiledLog } from './support/tile-client.ts';

const vectors = JSON.parse(readFileSync(new URL('./vectors/c2sp-tiles.json', import.meta.url), 'utf8')) as {
  origin: string;
  log_vkey: string;
  entries_base64: string[];
  sizes: Record<string, { root: string; checkpoint: string; tiles_sha256: Record<string, string>; bundles_sha256: Record<string, string> }>;
  tiles_1000_base64: Record<string, string>;
};
const vectorEntries = vectors.entries_base64.map((e) => Buffer.from(e, 'base64'));

describe('the tile client written from the C2SP texts', () => {
  it('reads the independent 1000-entry vector log and its checkpoint', async () => {
    // The vectors carry the hash tiles; the bundles are the entries, each after its big-endian uint16 length.
    const served: Record<string, string> = { ...vectors.tiles_1000_base64 };
    for (let n = 0; n * 256 < 1000; n++) {
      const chunk = vectorEntries.slice(n * 256, n * 256 + 256);
      const bundle = Buffer.concat(chunk.flatMap((e) => [Buffer.from([e.length >> 8, e.length & 0xff]), e]));
      served[`tile/entries/${indexPath(n)}${chunk.length === 256 ? '' : `.p/${chunk.length}`}`] = bundle.toString('base64');
    }
    const get = async (path: string) => {
      if (path === 'checkpoint') return Buffer.from(vectors.sizes['1000']!.checkpoint);
      const b = served[path];
      if (!b) throw new Error(`vector has no ${path}`);
      return Buffer.from(b, 'base64');
    };
    const { entries } = await readTiledLog(get, vectors.log_vkey, vectors.origin);
    expect(entries.map((e) => e.toString('base64'))).toEqual(vectors.entries_base64);
  });
});

// ---------------------------------------------------------------- what the ledger stores

describe('the ledger stores exactly the C2SP tiles of the vectors', () => {
  let ledger: Ledger;
  beforeAll(async () => {
    ledger = await openLedger(loadConfig(testEnv(tempDir())));
  });
  afterAll(() => ledger.close());

  it('at sizes 1, 255, 256, 257 and 1000: every hash tile and bundle has the vector SHA-256, every root the vector root', async () => {
    let size = 0;
    for (const target of Object.keys(vectors.sizes)
      .map(Number)
      .sort((a, b) => a - b)) {
      await ledger.write((tx) => appendLeaves(tx, 'astl', vectorEntries.slice(size, target)));
      size = target;
      const v = vectors.sizes[String(target)]!;
      expect(Buffer.from((await treeHead(ledger.read, 'astl')).root).toString('base64')).toBe(v.root);
      for (const [path, digest] of [...Object.entries(v.tiles_sha256), ...Object.entries(v.bundles_sha256)]) {
        const ref = parseTilePath(path.slice('tile/'.length))!;
        expect(ref, path).toBeDefined();
        const bytes =
          ref.level === 'entries'
            ? await readBundle(ledger.read, 'astl', ref.n, ref.width)
            : await readHashTile(ledger.read, 'astl', ref.level, ref.n, ref.width);
        expect(createHash('sha256').update(bytes!).digest('hex'), path).toBe(digest);
      }
    }
    // A tile wider than the log is absent, not padded.
    expect(await readHashTile(ledger.read, 'astl', 0, 3, 233)).toBeUndefined();
    expect(await readBundle(ledger.read, 'astl', 4, 1)).toBeUndefined();
  });

  it('after leaves added and taken back across a tile boundary (a failed act), stores only the kept ones', async () => {
    // Entries 250..549 replaced by others, then truncated to 250: the level-1 node those completed at 256 and 512 must go too.
    const pending = new PendingAppend(EMPTY_EDGE);
    for (const e of vectorEntries.slice(0, 250)) pending.add(e);
    for (let i = 0; i < 300; i++) pending.add(Buffer.from(`not kept ${i}`));
    pending.truncate(250);
    for (const e of vectorEntries.slice(250)) pending.add(e);
    const other = await openLedger(loadConfig(testEnv(tempDir())));
    try {
      await other.write((tx) => writeAppend(tx, 'astl', pending));
      const v = vectors.sizes['1000']!;
      expect(Buffer.from((await treeHead(other.read, 'astl')).root).toString('base64')).toBe(v.root);
      for (const [path, digest] of Object.entries(v.tiles_sha256)) {
        const ref = parseTilePath(path.slice('tile/'.length))!;
        const bytes =
          ref.level === 'entries'
            ? await readBundle(other.read, 'astl', ref.n, ref.width)
            : await readHashTile(other.read, 'astl', ref.level, ref.n, ref.width);
        expect(createHash('sha256').update(bytes!).digest('hex'), path).toBe(digest);
      }
    } finally {
      other.close();
    }
  });
});

describe('tile paths', () => {
  it('spell N in 3-digit groups with x prefixes and parse one spelling only', () => {
    expect(tilePath(0, 1234067, 256)).toBe('tile/0/x001/x234/067');
    expect(tilePath(1, 5, 7)).toBe('tile/1/005.p/7');
    expect(parseTilePath('entries/x001/x234/067.p/8')).toEqual({ level: 'entries', n: 1234067, width: 8 });
    for (const bad of ['0/5', '0/005.p/256', '0/005.p/0', '0/005.p/07', '00/005', '0/x000/005', '0/x1/005', 'entries/005/', '64/000']) {
      expect(parseTilePath(bad), bad).toBeUndefined();
    }
  });
});

describe("a group's inclusion proofs at its final size, from the edges and the group's leaves", () => {
  it('equal the reference proofs for every leaf of groups that start and end anywhere', () => {
    const hashes = Array.from({ length: 600 }, (_, i) => leafHash(Buffer.from(`g${i}`)));
    const edges: Edge[] = [EMPTY_EDGE];
    for (const h of hashes) edges.push(extendEdge(edges[edges.length - 1]!, h).edge);
    for (const [start, end] of [
      [0, 1],
      [0, 7],
      [5, 6],
      [255, 257],
      [250, 300],
      [256, 512],
      [1, 600],
      [511, 513],
      [300, 301],
    ] as const) {
      const appended = leafHashReader(hashes.slice(start, end), start);
      const root = rootOf(hashes.slice(0, end));
      for (let i = start; i < end; i++) {
        const proof = inclusionFrom(edges[i]!, end, appended);
        // The reference: each sibling's subtree hashed from all the leaves.
        expect(proof, `${i} of [${start}, ${end})`).toEqual(proveInclusion(i, end).map(({ lo, hi }) => rootOf(hashes.slice(lo, hi))));
        verifyInclusion(i, end, hashes[i]!, proof, root);
      }
    }
  });
});

// ---------------------------------------------------------------- roots and proofs from tiles

describe('roots and proofs computed from tiles agree with the reference Merkle code', () => {
  let ledger: Ledger;
  const entries = Array.from({ length: 65_537 }, (_, i) => Buffer.from(`e${i}`));
  const hashes = entries.map((e) => leafHash(e));
  const root = (n: number) => rootOf(hashes.slice(0, n));
  beforeAll(async () => {
    ledger = await openLedger(loadConfig(testEnv(tempDir())));
    // Appends of uneven sizes, so that segments start and end anywhere in a tile.
    for (let at = 0, step = 1; at < entries.length; step = (step * 7) % 4093 || 1) {
      const next = Math.min(entries.length, at + step);
      await ledger.write((tx) => appendLeaves(tx, 'triggers', entries.slice(at, next)));
      at = next;
    }
  }, 120_000);
  afterAll(() => ledger.close());

  it('at tile and level boundaries and at random sizes', async () => {
    let seed = 26;
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const sizes = [1, 2, 255, 256, 257, 511, 512, 65_535, 65_536, 65_537, ...Array.from({ length: 6 }, () => 1 + random(65_537))];
    for (const size of sizes) {
      const head = await treeHead(ledger.read, 'triggers', size);
      expect(Buffer.from(head.root).equals(Buffer.from(root(size))), `root at ${size}`).toBe(true);
      for (const index of [0, size - 1, random(size)]) {
        const p = await inclusionProof(ledger.read, 'triggers', index, size);
        expect(() => verifyInclusion(index, size, hashes[index]!, p.hashes, head.root)).not.toThrow();
      }
      const from = 1 + random(size);
      const c = await consistencyProof(ledger.read, 'triggers', from, size);
      expect(() => verifyConsistency(from, size, c, root(from), head.root)).not.toThrow();
    }
  }, 120_000);
});

// ---------------------------------------------------------------- served over HTTP

/** The canonical path of every hash tile (levels 0 and 1) and entry bundle of a log of `size` entries (C2SP tlog-tiles). */
function canonicalTiles(size: number): string[] {
  const paths: string[] = [];
  for (const level of [0, 1, 'entries'] as const) {
    const nodes = level === 'entries' ? size : Math.floor(size / 256 ** level);
    for (let n = 0; n * 256 < nodes; n++) {
      const width = Math.min(256, nodes - n * 256);
      paths.push(`tile/${level}/${indexPath(n)}${width < 256 ? `.p/${width}` : ''}`);
    }
  }
  return paths;
}

/** Other spellings of a canonical tile path (`tile/<L>/<N>[.p/<W>]`), each naming no tile. */
function misspellings(path: string): string[] {
  const [, level, n, width] = /^tile\/(entries|\d+)\/([x\d/]+)(?:\.p\/(\d+))?$/.exec(path)!;
  const last = n!.lastIndexOf('/') + 1;
  const escapedDigit = `${n!.slice(0, last)}%3${n![last]}${n!.slice(last + 1)}`;
  const p = width === undefined ? '' : `.p/${width}`;
  return [
    `tile/${level}/${escapedDigit}${p}`,
    `tile/${level}/${n!.replace(/\d/g, (d) => `%3${d}`)}${p}`,
    `tile//${level}/${n}${p}`,
    `tile/${level}//${n}${p}`,
    `tile/${level}/${n}${p}/`,
    `tile/${level}/x000/${n}${p}`,
    `tile%2F${level}/${n}${p}`,
    `tile/${level}%2F${n}${p}`,
    `til%65/${level}/${n}${p}`,
    `tile/${level}/${n}${p}#`,
    `tile/${level}/${n}${p};x`,
    level === 'entries' ? `tile/%65ntries/${n}${p}` : `tile/0${level}/${n}${p}`,
    level === 'entries' ? `tile/Entries/${n}${p}` : `tile/%3${level}/${n}${p}`,
    ...(width === undefined
      ? [`tile/${level}/${n}.p/256`]
      : [
          `tile/${level}/${n}.P/${width}`,
          `tile/${level}/${n}.p/0${width}`,
          `tile/${level}/${n}%2Ep/${width}`,
          `tile/${level}/${n}.p%2F${width}`,
          `tile/${level}/${n}.p/%3${width[0]}${width.slice(1)}`,
        ]),
  ];
}

/** A GET (or HEAD) of `target` exactly as written: fetch would normalize some spellings before sending them. */
function rawGet(
  url: string,
  target: string,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: target, method }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('every public log served as C2SP tiles', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    const key = await s.newKey('tiles');
    const fuse = (await (await s.fetch('/v1/fuses', { key: key.secret, json: {} })).json()).fuse_id as string;
    // Receipts past one full tile, through real hops; astl and triggers through direct appends.
    for (let i = 0; i < 300; i += 50) {
      await Promise.all(Array.from({ length: 50 }, () => s.fetch('/v1/fuse/hop', { key: key.secret, json: { fuse_id: fuse } })));
    }
    await s.ctx.ledger.write((tx) => appendLeaves(tx, 'astl', vectorEntries.slice(0, 600)));
  }, 120_000);
  afterAll(() => s.stop());

  it('a client with only the tiles prefix and the verifier key reads and verifies each log', async () => {
    for (const name of ['receipts', 'astl', 'triggers', 'clearing']) {
      const info = await (await s.fetch(`/api/v1/logs/${name}`)).json();
      expect(info.tiles_url).toBe(`${new URL(s.ctx.config.SITE_URL).origin}/${name}/`);
      // C2SP: the origin is the prefix without its scheme.
      expect(info.tiles_url.replace(/^https?:\/\//, '').replace(/\/$/, '')).toBe(info.origin);
      const prefix = new URL(info.tiles_url).pathname;
      const get = async (path: string) => {
        const r = await s.fetch(prefix + path);
        expect(r.status, `${name}/${path}`).toBe(200);
        if (path === 'checkpoint') {
          expect(r.headers.get('content-type')).toBe('text/plain; charset=utf-8');
          expect(Number(/max-age=(\d+)/.exec(r.headers.get('cache-control') ?? '')![1])).toBeLessThanOrEqual(5);
        } else {
          expect(r.headers.get('content-type')).toBe('application/octet-stream');
          expect(r.headers.get('cache-control')).toContain('immutable');
        }
        return new Uint8Array(await r.arrayBuffer());
      };
      const read = await readTiledLog(get, info.verifier_key, info.origin);
      expect(read.size).toBe(info.tree_size);
      if (name === 'receipts') expect(read.size).toBeGreaterThanOrEqual(301);
      if (name === 'astl') expect(read.entries.map((e) => e.toString('base64'))).toEqual(vectors.entries_base64.slice(0, 600));
    }
  }, 60_000);

  it('serves each tile, bundle and checkpoint under its one canonical path only: any other spelling is a 404 problem', async () => {
    let checked = 0;
    for (const log of ['receipts', 'astl', 'triggers', 'clearing']) {
      const size = ((await (await s.fetch(`/api/v1/logs/${log}`)).json()) as { tree_size: number }).tree_size;
      const escapedLog = `%${log.charCodeAt(0).toString(16)}${log.slice(1)}`;
      for (const tile of canonicalTiles(size)) {
        const served = await rawGet(s.url, `/${log}/${tile}`);
        expect(served.status, `/${log}/${tile}`).toBe(200);
        expect(served.headers['cache-control']).toContain('immutable');
        // A query is not part of the path: the tile is the same.
        expect((await rawGet(s.url, `/${log}/${tile}?v=1`)).status).toBe(200);
        for (const target of [...misspellings(tile).map((m) => `/${log}/${m}`), `/${escapedLog}/${tile}`, `/${log}//${tile}`]) {
          for (const method of ['GET', 'HEAD']) {
            const r = await rawGet(s.url, target, method);
            expect(r.status, `${method} ${target}`).toBe(404);
            expect(r.headers['content-type'], target).toContain('application/problem+json');
            expect(r.headers['cache-control'], target).not.toContain('immutable');
            checked++;
          }
        }
      }
      expect((await rawGet(s.url, `/${log}/checkpoint`)).status).toBe(200);
      for (const target of [`/${log}/checkpoint/`, `/${log}/%63heckpoint`, `/${log}//checkpoint`, `/${escapedLog}/checkpoint`])
        expect((await rawGet(s.url, target)).status, target).toBe(404);
    }
    // receipts (>= 301 entries) and astl (600): tiles at levels 0 and 1, full and partial, and their bundles.
    expect(checked).toBeGreaterThan(300);
  });

  it('answers a tile that does not exist yet, or a path that is not a tile, with a 404 problem', async () => {
    for (const path of [
      '/astl/tile/0/005',
      '/astl/tile/0/002.p/89',
      '/astl/tile/entries/000.p/256',
      '/astl/tile/0/5',
      '/astl/tile/9/000',
    ]) {
      const r = await s.fetch(path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
    }
  });
});

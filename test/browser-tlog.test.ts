/**
 * One crypto core for the server, the npm package and the browser: the
 * published vectors of test/vectors/ and tokens signed by node:crypto run
 * against src/crypto in Node, on the portable primitives (@noble/hashes,
 * WebCrypto) and on node:crypto's (what the server installs), and in headless
 * Chromium, on the core bundled by Vite as the site bundles it; all three
 * report the same results. The server runs on node:crypto's primitives.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base64 } from '../src/crypto/base64.ts';
import { cosign, cosignerVkey } from '../src/crypto/cosignature.ts';
import { signerOf } from '../src/crypto/ed25519.ts';
import { compactJwsSync } from '../src/crypto/jws.ts';
import { rootOf, leafHash } from '../src/crypto/merkle.ts';
import { NODE } from '../src/crypto/node.ts';
import { checkpointText, signNote } from '../src/crypto/note.ts';
import { currentPlatform, PORTABLE, usePlatform, type Platform } from '../src/crypto/platform.ts';
import { RECEIPT_TYP } from '../src/crypto/receipt.ts';
import { bundleForBrowser } from './support/browser-bundle.ts';
import { launchChromium } from './support/browser.ts';
import { runCoreVectors, type CoreVectorData, type VectorResult } from './support/core-vectors.ts';
import { startTestServer } from './support/server.ts';

const VECTORS = fileURLToPath(new URL('./vectors/', import.meta.url));
const json = (path: string) => JSON.parse(readFileSync(join(VECTORS, path), 'utf8'));

function probes(dir: string): CoreVectorData['inclusion'] {
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : f.endsWith('.json') ? [join(d, f)] : []));
  return walk(join(VECTORS, dir))
    .sort()
    .map((f) => ({ file: relative(VECTORS, f), probe: JSON.parse(readFileSync(f, 'utf8')) }));
}

/** A note, a JWS and a cosignature signed by node:crypto with a key made for this run. */
function signedByNode(): CoreVectorData['signed'] {
  const { privateKey } = generateKeyPairSync('ed25519');
  const signer = signerOf(privateKey);
  const origin = 'example.com/receipts';
  const leaves = Array.from({ length: 40 }, (_, i) => leafHash(new TextEncoder().encode(`leaf ${i}`)));
  const note = signNote(checkpointText({ origin, size: 40, root: rootOf(leaves) }), origin, signer);
  const kid = 'k1';
  const jwk = { kid, kty: 'OKP', crv: 'Ed25519', x: Buffer.from(signer.raw).toString('base64url') };
  const jws = compactJwsSync(JSON.stringify({ receipt_id: 'rcpt_1', decision: 'PERMIT' }), { kid, privateKey } as never, RECEIPT_TYP);
  const body = note.slice(0, note.lastIndexOf('\n\n') + 1);
  return {
    raw: base64(signer.raw),
    origin,
    note,
    jwk,
    jws,
    typ: RECEIPT_TYP,
    cosignerVkey: cosignerVkey('witness.example/w', signer.raw),
    cosignedNote: note + cosign(body, 1_795_600_000, 'witness.example/w', signer),
  };
}

const data: CoreVectorData = {
  reference: json('rfc6962-reference-tree.json'),
  inclusion: probes('transparency-dev-merkle/inclusion'),
  consistency: probes('transparency-dev-merkle/consistency'),
  notes: json('signed-note-vectors.json').vectors,
  witness: json('c2sp-witness.json'),
  tiles: json('c2sp-tiles.json'),
  signed: signedByNode(),
};

async function runOn(platform: Platform): Promise<VectorResult[]> {
  const before = currentPlatform();
  usePlatform(platform);
  try {
    return await runCoreVectors(data);
  } finally {
    usePlatform(before);
  }
}

let inNode: VectorResult[];

describe('the crypto core in Node', () => {
  it('passes every vector on the portable primitives (@noble/hashes, WebCrypto)', async () => {
    inNode = await runOn(PORTABLE);
    expect(data.inclusion.length + data.consistency.length).toBeGreaterThanOrEqual(196);
    expect(inNode.filter((r) => !r.ok)).toEqual([]);
    expect(inNode.length).toBe(15);
  });

  it("passes every vector on node:crypto's primitives, with the same results", async () => {
    expect(NODE.sha256).not.toBe(PORTABLE.sha256);
    expect(await runOn(NODE)).toEqual(inNode);
  });

  it('fails a vector when the core is wrong (a hasher that is not SHA-256)', async () => {
    const broken = await runOn({
      ...PORTABLE,
      sha256: (d) => PORTABLE.sha256(typeof d === 'string' ? `${d}!` : new Uint8Array([...d, 0])),
    });
    expect(broken.filter((r) => !r.ok).length).toBeGreaterThan(10);
  });

  it("the server installs node:crypto's primitives as it starts", async () => {
    usePlatform(PORTABLE);
    const srv = await startTestServer();
    try {
      expect(currentPlatform()).toEqual(NODE);
    } finally {
      await srv.stop();
      usePlatform(PORTABLE);
    }
  });
});

describe('the crypto core in Chromium', () => {
  let browser: Browser;
  let bundle: string;
  beforeAll(async () => {
    bundle = await bundleForBrowser(fileURLToPath(new URL('./support/core-vectors.ts', import.meta.url)), 'coreVectors');
    ({ browser } = await launchChromium());
  }, 120_000);
  afterAll(() => browser?.close());

  it('refuses to bundle a module that needs Node (the Node platform itself)', async () => {
    await expect(bundleForBrowser(fileURLToPath(new URL('../src/crypto/node.ts', import.meta.url)), 'node')).rejects.toThrow(
      /imports node:crypto/,
    );
  });

  it('bundles with no Node module and passes every vector with the results it gives in Node', async () => {
    const page = await browser.newPage();
    // WebCrypto is there only in a secure context: a page of http://localhost is one, about:blank is not.
    await page.route('http://localhost/core', (route) =>
      route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>core</title>' }),
    );
    await page.goto('http://localhost/core');
    await page.addScriptTag({ content: bundle });
    const inChromium = await page.evaluate(
      async (d) => (globalThis as unknown as { coreVectors: { runCoreVectors: typeof runCoreVectors } }).coreVectors.runCoreVectors(d),
      data,
    );
    expect(inChromium.filter((r) => !r.ok)).toEqual([]);
    expect(inChromium).toEqual(inNode ?? (await runOn(PORTABLE)));
    await page.close();
  });
});

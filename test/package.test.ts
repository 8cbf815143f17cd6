/**
 * `fusegate/client` and `fusegate/rr1` are importable by another project: the
 * packed tarball (npm pack, which builds lib/ with tsc) is unpacked into a
 * temporary project's node_modules as npm would, its type declarations check
 * under a strict NodeNext consumer, and Node imports both entry points and
 * calls them: the client against a real server, the middleware in an h3 app.
 *
 * An npm install of the tarball would also fetch the server's own dependencies
 * (Astro, libSQL: about 300 packages). Instead each dependency the packed
 * package.json declares is linked from this repository's node_modules, and
 * nothing else is: an entry point importing an undeclared package fails here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS, cleanEnv, run } from './support/cli.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REPO = process.cwd();
let dir: string;
let consumer: string;
let packed: { filename: string; files: Array<{ path: string }> };

async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fusegate-pack-'));
  const pack = await run('npm', ['pack', '--json', '--pack-destination', dir], cleanEnv(), REPO);
  expect(pack.code, pack.stderr).toBe(0);
  packed = (JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as Array<typeof packed>)[0]!;
  const tgz = join(dir, packed.filename);

  consumer = join(dir, 'consumer');
  const installed = join(consumer, 'node_modules', 'fusegate');
  mkdirSync(installed, { recursive: true });
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const untar = await run('tar', ['-xzf', tgz, '-C', installed, '--strip-components=1']);
  expect(untar.code, untar.stderr).toBe(0);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const dep of Object.keys(manifest.dependencies)) {
    const link = join(consumer, 'node_modules', dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', dep), link, 'dir');
  }
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the packed package', () => {
  it('carries the built entry points and their declarations, and no sources or tests', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['package.json', 'lib/client.js', 'lib/client.d.ts', 'lib/rr1/index.js', 'lib/rr1/index.d.ts', 'lib/rr1/middleware.js', 'lib/crypto/cose.js']));
    expect(paths.filter((p) => /^(src|test|docs|scripts)\/|\.ts$/.test(p) && !p.endsWith('.d.ts'))).toEqual([]);
  });

  it('type-checks in a strict NodeNext consumer through the "types" condition', async () => {
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2024', strict: true, noEmit: true, skipLibCheck: true, types: [] },
      files: ['check.ts'],
    }));
    writeFileSync(join(consumer, 'check.ts'), `
import { FuseGateClient, FuseGateError, verifyCoseReceipt, type HopAnswer } from 'fusegate/client';
import { requireReceipt, REQUIRED_STATUS, type RequireReceiptOptions } from 'fusegate/rr1';
export async function mayAct(gate: FuseGateClient, fuse_id: string): Promise<boolean> {
  const hop: HopAnswer = await gate.hop({ fuse_id });
  return hop.verdict;
}
// @ts-expect-error the declarations are real types, not any: verdict is a boolean
export const notAString: string = ({} as HopAnswer).verdict;
// Every operation by name, its input typed from its declaration.
export const classified = (gate: FuseGateClient) => gate.call('classify', { text: 'wire 5,000 USD' });
// @ts-expect-error a hop needs its fuse_id
export const noFuse = (gate: FuseGateClient) => gate.call('fuse_hop', {});
const options: RequireReceiptOptions = { act: 'wire', gate: 'https://gate.example', verify: async () => ({ valid: false, reason: 'x', detail: 'y' }) };
export const middleware = requireReceipt(options);
export const status: number = REQUIRED_STATUS;
export const statusOf = (e: unknown) => (e instanceof FuseGateError ? e.problem.code : undefined);
export const coseIndex = async (cose: Uint8Array, key: Uint8Array): Promise<number> => (await verifyCoseReceipt(cose, key)).leafIndex;
`);
    const tsc = await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', consumer]);
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
  }, PROCESS_TEST_TIMEOUT_MS);

  describe('imported by Node', () => {
    let s: TestServer;
    let base: string;
    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      s = await startTestServer({ PORT: String(port), BASE_URL: base, SITE_URL: base });
    });
    afterAll(() => s?.stop());

    it('fusegate/client calls a real gate and verifies a COSE receipt; fusegate/rr1 answers 428 without a receipt and lets a PERMIT through once', async () => {
      const key = await s.newKey('consumer');
      const fuse = await (await s.fetch('/v1/fuses', { key: key.secret, json: { state: 'LIVE' } })).json();
      const permit = (await (await s.fetch('/api/v1/execute-gate', { key: key.secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'wire' } } })).json()).receipt as string;
      writeFileSync(join(consumer, 'use.mjs'), `
import { FuseGateClient, FuseGateError, verifyCoseReceipt } from 'fusegate/client';
import { requireReceipt, remoteReceiptVerifier } from 'fusegate/rr1';
import { H3 } from 'h3';
const { GATE, KEY, FUSE, PERMIT } = process.env;
const gate = new FuseGateClient({ baseUrl: GATE, apiKey: KEY });
const me = await gate.me();
const hop = await gate.hop({ fuse_id: FUSE });
// The hop's receipt as SCITT COSE, checked with the service's published key; one byte changed, refused.
const cose = new Uint8Array(await (await fetch(GATE + '/v1/receipts/' + hop.receipt_id, { headers: { accept: 'application/cose' } })).arrayBuffer());
const key = Uint8Array.from(atob((await (await fetch(GATE + '/crypto/public-key')).json()).public_key_base64), (c) => c.charCodeAt(0));
const proven = await verifyCoseReceipt(cose, key);
const forged = Uint8Array.from(cose);
forged[forged.length - 1] ^= 1;
const forgery = await verifyCoseReceipt(forged, key).then(() => 'accepted', (e) => e.message);
let refused;
try { await new FuseGateClient({ baseUrl: GATE, apiKey: 'fg_live_nope' }).me(); } catch (e) { refused = e instanceof FuseGateError ? e.problem.code : String(e); }
const app = new H3();
app.post('/wire', () => ({ wired: true }), {
  middleware: [requireReceipt({ act: 'wire', gate: GATE, verify: remoteReceiptVerifier(GATE + '/.well-known/prefinality-jwks.json') })],
});
const call = (receipt) => app.fetch(new Request('http://service.test/wire', { method: 'POST', headers: receipt ? { 'gate-receipt': receipt } : {} }));
const none = await call();
const ok = await call(PERMIT);
const replay = await call(PERMIT);
console.log(JSON.stringify({ me: me.name, hop: { status: hop.status, verdict: hop.verdict, state: hop.state }, refused,
  cose: { entry: new TextDecoder().decode(proven.entry).includes(hop.receipt_id), index: proven.leafIndex >= 0 && proven.leafIndex < proven.treeSize, forgery },
  rr1: { none: none.status, required: none.headers.get('receipt-required'), ok: ok.status, body: await ok.json(), replay: replay.status } }));
`);
      const r = await run(process.execPath, ['use.mjs'], { ...cleanEnv(), GATE: base, KEY: key.secret, FUSE: fuse.fuse_id, PERMIT: permit }, consumer);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({
        me: 'consumer',
        hop: { status: 200, verdict: true, state: 'LIVE' },
        refused: 'unknown_key',
        cose: { entry: true, index: true, forgery: expect.stringMatching(/does not verify/) },
        rr1: { none: 428, required: `act="wire", gate="${base}", header="Gate-Receipt", reason="receipt_missing"`, ok: 200, body: { wired: true }, replay: 428 },
      });
    }, PROCESS_TEST_TIMEOUT_MS);
  });
});

/**
 * `fusegate/client`, `fusegate/rr1` and the tool guards (`fusegate/guard` and
 * its SDK adapters) are importable by another project: the packed tarball (npm
 * pack, which builds lib/ with tsc) is unpacked into a temporary project's
 * node_modules as npm would, its type declarations check under a strict
 * NodeNext consumer, and Node imports the entry points and calls them: the
 * client and a guard against a real server, the middleware in an h3 app.
 *
 * An npm install of the tarball would also fetch the server's own dependencies
 * (Astro, libSQL: about 300 packages). Instead each dependency the packed
 * package.json declares is linked from this repository's node_modules, and
 * nothing else is: an entry point importing an undeclared package fails here.
 * The SDKs the adapters need are optional peer dependencies: linked only once
 * the client and the guard have been shown to work without them.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCESS_TEST_TIMEOUT_MS, cleanEnv, run } from './support/cli.ts';
import { freePort } from './support/ports.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REPO = process.cwd();
let dir: string;
let consumer: string;
let packed: { filename: string; files: Array<{ path: string }> };
let manifest: {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};

/** Installs `dep` into the consumer as a link to this repository's copy. */
function link(dep: string): void {
  const at = join(consumer, 'node_modules', dep);
  mkdirSync(dirname(at), { recursive: true });
  symlinkSync(join(REPO, 'node_modules', dep), at, 'dir');
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
  manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as typeof manifest;
  for (const dep of Object.keys(manifest.dependencies)) link(dep);
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the packed package', () => {
  it('carries the built entry points and their declarations, and no sources or tests', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'lib/client.js',
        'lib/client.d.ts',
        'lib/rr1/index.js',
        'lib/rr1/index.d.ts',
        'lib/rr1/middleware.js',
        'lib/crypto/cose.js',
      ]),
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        'lib/guard/guard.js',
        'lib/guard/gate-check.js',
        'lib/guard/ai.js',
        'lib/guard/openai-agents.js',
        'lib/guard/langchain.js',
        'lib/guard/ai.d.ts',
        'lib/domain/tool-name.js',
      ]),
    );
    expect(paths.filter((p) => /^(src|test|docs|scripts)\/|\.ts$/.test(p) && !p.endsWith('.d.ts'))).toEqual([]);
    // The SDKs are the adapters' optional peers: installing the client never brings them.
    const sdks = ['@langchain/core', '@openai/agents', 'ai'];
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(sdks);
    expect(sdks.every((p) => manifest.peerDependenciesMeta[p]?.optional === true && !(p in manifest.dependencies))).toBe(true);
  });

  it('runs the client and a guard with none of the SDKs installed; an adapter needs its SDK', async () => {
    writeFileSync(
      join(consumer, 'bare.mjs'),
      `
import { FuseGateClient } from 'fusegate/client';
import { guard, FuseGateRefusal } from 'fusegate/guard';
const offline = new FuseGateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'fg_x' });
const refused = await guard(async () => 'ran', { fuse: 'fuse_x', kind: 'deploy', gate: offline })().catch((e) => e);
let adapter;
try { await import('fusegate/guard/openai-agents'); adapter = 'loaded'; } catch (e) { adapter = e.code; }
console.log(JSON.stringify({ refused: refused instanceof FuseGateRefusal, decision: refused.decision, adapter }));
`,
    );
    const r = await run(process.execPath, ['bare.mjs'], cleanEnv(), consumer);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ refused: true, decision: null, adapter: 'ERR_MODULE_NOT_FOUND' });
    for (const sdk of Object.keys(manifest.peerDependencies)) link(sdk);
  });

  it('type-checks in a strict NodeNext consumer through the "types" condition', async () => {
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2024',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['check.ts'],
      }),
    );
    writeFileSync(
      join(consumer, 'check.ts'),
      `
import { FuseGateClient, FuseGateError, verifyCoseReceipt, type HopAnswer } from 'fusegate/client';
import { requireReceipt, REQUIRED_STATUS, type RequireReceiptOptions } from 'fusegate/rr1';
import { guard } from 'fusegate/guard';
import { guardTools } from 'fusegate/guard/ai';
import { guardTool as guardAgentsTool } from 'fusegate/guard/openai-agents';
import { guardTool as guardLangchainTool } from 'fusegate/guard/langchain';
import type { Tool } from 'ai';
import type { FunctionTool } from '@openai/agents';
import type { StructuredToolInterface } from '@langchain/core/tools';
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
// The guards keep the guarded function's type.
export const guarded: (to: string) => Promise<number> = guard(async (to: string) => to.length, { fuse: 'fuse_x', kind: 'send_email' });
export const paying = guard(async (amount: string) => amount, { fuse: 'fuse_x', rail: 'x402', transfer: (amount) => ({ amount, currency: 'USDC' }) });
// @ts-expect-error a tool that pays names its rail's transfer
export const noTransfer = guard(async () => 0, { fuse: 'fuse_x', rail: 'x402' });
export const aiTools = (t: Tool) => guardTools({ t }, { fuse: 'fuse_x', kinds: { t: 'deploy' } });
export const agentsTool = (t: FunctionTool) => guardAgentsTool(t, { fuse: 'fuse_x' });
export const langchainTool = (t: StructuredToolInterface) => guardLangchainTool(t, { fuse: 'fuse_x' });
`,
    );
    const tsc = await run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', consumer]);
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);
    // The SDKs' declarations are large: checking them takes a while on a busy machine.
  }, 180_000);

  describe('imported by Node', () => {
    let s: TestServer;
    let base: string;
    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      s = await startTestServer({ PORT: String(port), BASE_URL: base, SITE_URL: base });
    });
    afterAll(() => s?.stop());

    it(
      'fusegate/client calls a real gate and verifies a COSE receipt; fusegate/rr1 answers 428 without a receipt and lets a PERMIT through once',
      async () => {
        const key = await s.newKey('consumer');
        const fuse = await (await s.fetch('/v1/fuses', { key: key.secret, json: { state: 'LIVE' } })).json();
        const permit = (
          await (
            await s.fetch('/api/v1/execute-gate', { key: key.secret, json: { fuse_id: fuse.fuse_id, action: { kind: 'wire' } } })
          ).json()
        ).receipt as string;
        writeFileSync(
          join(consumer, 'use.mjs'),
          `
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
`,
        );
        const r = await run(
          process.execPath,
          ['use.mjs'],
          { ...cleanEnv(), GATE: base, KEY: key.secret, FUSE: fuse.fuse_id, PERMIT: permit },
          consumer,
        );
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toEqual({
          me: 'consumer',
          hop: { status: 200, verdict: true, state: 'LIVE' },
          refused: 'unknown_key',
          cose: { entry: true, index: true, forgery: expect.stringMatching(/does not verify/) },
          rr1: {
            none: 428,
            required: `act="wire", gate="${base}", header="Gate-Receipt", reason="receipt_missing"`,
            ok: 200,
            body: { wired: true },
            replay: 428,
          },
        });
      },
      PROCESS_TEST_TIMEOUT_MS,
    );

    it(
      'fusegate/guard and fusegate/guard/langchain gate a tool against a real gate, from FUSEGATE_URL and FUSEGATE_KEY',
      async () => {
        const key = await s.newKey('guarded');
        const fuse = await (await s.fetch('/v1/fuses', { key: key.secret, json: { state: 'LIVE' } })).json();
        writeFileSync(
          join(consumer, 'guard.mjs'),
          `
import { guard, FuseGateRefusal } from 'fusegate/guard';
import { guardTool } from 'fusegate/guard/langchain';
import { tool } from '@langchain/core/tools';
const { FUSE } = process.env;
let sent = 0;
const send = guard(async (to) => (sent++, 'sent ' + to), { fuse: FUSE, kind: 'send_email', name: 'send_email' });
const first = await send('ops');
const lcTool = guardTool(tool(async ({ to }) => (sent++, 'lc ' + to), { name: 'lc_send', description: 'send', schema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } }), { fuse: FUSE, kind: 'send_email' });
const viaLangchain = await lcTool.invoke({ to: 'ops' });
await fetch(process.env.FUSEGATE_URL + '/v1/fuses/' + FUSE + '/dead', { method: 'POST', headers: { authorization: 'Bearer ' + process.env.FUSEGATE_KEY } });
const refused = await send('cfo').catch((e) => e);
console.log(JSON.stringify({ first, viaLangchain, refused: refused instanceof FuseGateRefusal && refused.decision, sent }));
`,
        );
        const r = await run(
          process.execPath,
          ['guard.mjs'],
          { ...cleanEnv(), FUSEGATE_URL: base, FUSEGATE_KEY: key.secret, FUSE: fuse.fuse_id },
          consumer,
        );
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toEqual({ first: 'sent ops', viaLangchain: 'lc ops', refused: 'DENY', sent: 2 });
      },
      PROCESS_TEST_TIMEOUT_MS,
    );
  });
});

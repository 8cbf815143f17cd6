/**
 * `fusegate proxy` in front of a server no one here wrote
 * (@modelcontextprotocol/server-everything, over stdio and over streamable
 * HTTP), driven by the official SDK client, against a real gate. What reaches
 * the upstream is counted outside the proxy: a stdio relay that logs every
 * request it passes on (support/counted-stdio.ts), or an HTTP forwarder.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FuseGateClient } from '../src/client.ts';
import { accountReceipts } from '../src/ledger/accounts.ts';
import { GATE_META_KEY } from '../src/proxy/session.ts';
import { cleanEnv, runCli } from './support/cli.ts';
import { freePort } from './support/ports.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';

const REPO = process.cwd();
const EVERYTHING = join(REPO, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const COUNTED = join(REPO, 'test/support/counted-stdio.ts');
const NODE = process.execPath;

type Gate = { decision: string | null; reason: string; receipt_id?: string; verify_url?: string; hold?: Record<string, unknown> };
const gateOf = (r: CallToolResult) => r._meta?.[GATE_META_KEY] as Gate;
const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

/** An agent's client with the capabilities that make the upstream offer its conditional tools; it answers sampling with a canned message. */
async function agentClient(transport: Transport): Promise<AgentClient> {
  const client = new Client(
    { name: 'agent', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: 'assistant',
    content: { type: 'text', text: 'a canned answer' },
    model: 'scripted',
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
  await client.connect(transport);
  // Progress as the transport delivered it: the SDK client itself drops a progress notification that
  // arrives in the same read as its request's response (it handles notifications a microtask later).
  const progress: number[] = [];
  const deliver = transport.onmessage!;
  transport.onmessage = (m, extra) => {
    if ('method' in m && m.method === 'notifications/progress') progress.push((m.params as { progress: number }).progress);
    deliver(m, extra);
  };
  return Object.assign(client, { progress });
}

type AgentClient = Client & { progress: number[] };

/** Calls a tool asking for its progress (the SDK sends a progress token); the progress delivered is `client.progress`. */
const withProgress = { onprogress: () => undefined };

/** Lines of a child's output, and a wait for the first one that matches. */
function lines(stream: NodeJS.ReadableStream | null): { text: () => string; wait: (re: RegExp) => Promise<RegExpExecArray> } {
  let buf = '';
  const waiters: Array<{ re: RegExp; resolve: (m: RegExpExecArray) => void }> = [];
  stream?.setEncoding?.('utf8');
  stream?.on('data', (d: string) => {
    buf += d;
    for (const w of waiters.splice(0)) {
      const m = w.re.exec(buf);
      if (m) w.resolve(m);
      else waiters.push(w);
    }
  });
  return {
    text: () => buf,
    wait: (re) =>
      new Promise((resolve) => {
        const m = re.exec(buf);
        if (m) resolve(m);
        else waiters.push({ re, resolve });
      }),
  };
}

interface Proxied {
  client: AgentClient;
  /** What reached the upstream: one line per request ("tools/call echo"). */
  upstreamCalls: () => string[];
  stderr: () => string;
}

describe('fusegate proxy', { timeout: 180_000 }, () => {
  let s: TestServer;
  let ops: FuseGateClient;
  let agent: FuseGateClient;
  let agentKey: string;
  let accountId: string;
  let fuse: string;
  let direct: AgentClient;
  /** One proxy for the tests that need no setting of their own, on a fuse of its own. */
  let shared: Proxied;
  let sharedFuse: string;
  const open: Array<{ close(): Promise<void> }> = [];

  /** The proxy over stdio in front of the counted stdio upstream, as an agent's MCP configuration would launch it. */
  async function proxied(
    opts: { kinds?: unknown; gateUrl?: string; key?: string; fuse?: string; gateTimeout?: number } = {},
  ): Promise<Proxied> {
    const dir = tempDir('fusegate-proxy-');
    const log = join(dir, 'upstream.log');
    const kindsArgs: string[] = opts.gateTimeout ? ['--gate-timeout', String(opts.gateTimeout)] : [];
    if (opts.kinds !== undefined) {
      writeFileSync(join(dir, 'kinds.json'), JSON.stringify(opts.kinds));
      kindsArgs.push('--kinds', join(dir, 'kinds.json'));
    }
    const transport = new StdioClientTransport({
      command: NODE,
      args: ['src/cli.ts', 'proxy', '--fuse', opts.fuse ?? fuse, ...kindsArgs, '--', NODE, COUNTED, log, NODE, EVERYTHING, 'stdio'],
      env: { ...cleanEnv(), FUSEGATE_URL: opts.gateUrl ?? s.url, FUSEGATE_KEY: opts.key ?? agentKey },
      stderr: 'pipe',
      cwd: REPO,
    });
    const stderr = lines(transport.stderr as unknown as NodeJS.ReadableStream);
    const client = await agentClient(transport);
    open.push(client);
    return { client, stderr: stderr.text, upstreamCalls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []) };
  }

  beforeAll(async () => {
    s = await startTestServer();
    const opsKey = await s.newKey('ops');
    accountId = opsKey.accountId;
    agentKey = (await s.newKey('agent', undefined, 'agent', accountId)).secret;
    ops = new FuseGateClient({ baseUrl: s.url, apiKey: opsKey.secret });
    agent = new FuseGateClient({ baseUrl: s.url, apiKey: agentKey });
    direct = await agentClient(new StdioClientTransport({ command: NODE, args: [EVERYTHING, 'stdio'], stderr: 'ignore' }));
    open.push(direct);
    sharedFuse = (await ops.createFuse({ state: 'LIVE', label: 'shared' })).fuse_id;
    shared = await proxied({ fuse: sharedFuse });
  });
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close().catch(() => undefined)));
    await s.stop();
  });
  beforeEach(async () => {
    fuse = (await ops.createFuse({ state: 'LIVE', label: 'proxy' })).fuse_id;
  });

  it("offers the upstream's tools, resources, prompts and instructions unchanged", async () => {
    const { client } = shared;
    expect(client.getServerVersion()).toEqual(direct.getServerVersion());
    expect(client.getInstructions()).toEqual(direct.getInstructions());
    expect(client.getServerCapabilities()).toEqual(direct.getServerCapabilities());
    const tools = await client.listTools();
    expect(tools).toEqual(await direct.listTools());
    // The tools offered only to a client that can sample are there: the upstream saw this client's capabilities.
    expect(tools.tools.map((t) => t.name)).toContain('trigger-sampling-request');
    expect(await client.listPrompts()).toEqual(await direct.listPrompts());
    expect(await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon' } })).toEqual(
      await direct.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon' } }),
    );
    const resources = await client.listResources();
    expect(resources).toEqual(await direct.listResources());
    expect(await client.listResourceTemplates()).toEqual(await direct.listResourceTemplates());
    const uri = resources.resources[0]!.uri;
    expect(await client.readResource({ uri })).toEqual(await direct.readResource({ uri }));
  });

  it('forwards a call on PERMIT, its result carrying the receipt, which names the tool; a blown fuse stops the next call before the upstream', async () => {
    const p = shared;
    const fuse = sharedFuse;
    const classified = (await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'classify', limit: 100 })).length;
    const hops = (await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'hop', limit: 100 })).length;
    const ok = (await p.client.callTool({ name: 'echo', arguments: { message: 'hello' } })) as CallToolResult;
    const expected = (await direct.callTool({ name: 'echo', arguments: { message: 'hello' } })) as CallToolResult;
    expect(ok.content).toEqual(expected.content);
    expect(ok.isError).toBeUndefined();
    const permit = gateOf(ok);
    expect(permit).toMatchObject({
      decision: 'PERMIT',
      receipt_id: expect.stringMatching(/^rcpt_/),
      verify_url: `${s.url.replace('127.0.0.1', 'localhost')}/v1/receipts/${permit.receipt_id}`,
    });
    expect((await agent.receipt(permit.receipt_id!)).payload).toMatchObject({
      kind: 'hop',
      decision: 'PERMIT',
      subject: fuse,
      data: { tool: 'echo' },
    });
    expect(p.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual(['tools/call echo']);

    await agent.blowFuse(fuse);
    const refused = (await p.client.callTool({ name: 'echo', arguments: { message: 'again' } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    const deny = gateOf(refused);
    expect(deny).toMatchObject({ decision: 'DENY', reason: 'the fuse is DEAD: it fails closed' });
    expect(textOf(refused)).toContain('DENY');
    expect(textOf(refused)).toContain(deny.receipt_id!);
    expect((await agent.receipt(deny.receipt_id!)).payload).toMatchObject({
      kind: 'hop',
      decision: 'DENY',
      data: { tool: 'echo', state: 'DEAD' },
    });
    // Not forwarded: the upstream saw one tools/call, the first.
    expect(p.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual(['tools/call echo']);
    expect(p.stderr()).toContain(`fusegate proxy: refused echo: DENY: the fuse is DEAD: it fails closed (receipt ${deny.receipt_id})`);
    // A call that asks for a task expects a task, not a tool result: its refusal is a JSON-RPC error.
    const asTask = await p.client
      .request(
        { method: 'tools/call', params: { name: 'echo', arguments: { message: 'later' }, task: { ttl: 60_000 } } },
        CreateTaskResultSchema,
      )
      .then(
        () => undefined,
        (e: McpError) => e,
      );
    expect(asTask).toBeInstanceOf(McpError);
    expect(asTask).toMatchObject({ code: -32600, data: { [GATE_META_KEY]: { decision: 'DENY' } } });
    expect(asTask!.message).toContain('Fuse Gate refused this call (DENY)');

    await ops.chargeFuse(fuse);
    expect(gateOf((await p.client.callTool({ name: 'echo', arguments: { message: 'back' } })) as CallToolResult).decision).toBe('PERMIT');
    expect(p.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual(['tools/call echo', 'tools/call echo']);
    // A tool the kinds file does not name is classified once, on its name and description, for the life of the proxy.
    expect(await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'classify', limit: 100 })).toHaveLength(classified + 1);
    // Each call asked the gate once, whether asked as it was read or by its handler (the one asking for a task).
    expect(await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'hop', limit: 100 })).toHaveLength(hops + 4);
  });

  it("passes the upstream's errors, progress and requests to the client through", async () => {
    const { client } = shared;
    // A tool error and a JSON-RPC error, as the upstream answers them.
    const badArgs = { name: 'get-sum', arguments: { a: 'one', b: 2 } };
    const viaProxy = (await client.callTool(badArgs)) as CallToolResult;
    expect(viaProxy.isError).toBe(true);
    expect(viaProxy.content).toEqual(((await direct.callTool(badArgs)) as CallToolResult).content);
    const errorOf = (c: Client) =>
      c.readResource({ uri: 'demo://resource/no-such-thing' }).then(
        () => undefined,
        (e: McpError) => ({ code: e.code, message: e.message }),
      );
    const upstreamError = await errorOf(direct);
    expect(upstreamError).toBeDefined();
    expect(await errorOf(client)).toEqual(upstreamError);

    client.progress.length = 0;
    const long = (await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.1, steps: 4 } },
      undefined,
      withProgress,
    )) as CallToolResult;
    expect(textOf(long)).toContain('Steps: 4');
    expect(client.progress).toEqual([1, 2, 3, 4]);

    // The upstream asks the agent's client to sample: the request goes out through the proxy and its answer back.
    const sampled = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'say something' } })) as CallToolResult;
    expect(textOf(sampled)).toContain('a canned answer');
  });

  it('asks as the kinds file says: an act kind, the fuse alone, or the pre-finality evaluate for a tool that pays', async () => {
    const classified = (await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'classify', limit: 100 })).length;
    const p = await proxied({
      kinds: {
        echo: 'launch_rocket',
        'get-tiny-image': null,
        'get-sum': {
          rail: 'x402',
          transfer: { amount: 'a', counterparty: { value: '0xabc' }, currency: { value: 'USDC' } },
          mandate: { max_amount: '1000', review_above: '50' },
        },
      },
    });
    const blocked = (await p.client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as CallToolResult;
    expect(gateOf(blocked)).toMatchObject({ decision: 'BLOCK', reason: 'act kind "launch_rocket" is outside the declared surface' });
    expect((await p.client.callTool({ name: 'get-tiny-image', arguments: {} })).isError).toBeUndefined();

    const go = (await p.client.callTool({ name: 'get-sum', arguments: { a: 5, b: 1 } })) as CallToolResult;
    expect(textOf(go)).toContain('6');
    expect(gateOf(go).decision).toBe('GO');
    expect((await agent.receipt(gateOf(go).receipt_id!)).payload).toMatchObject({
      kind: 'prefinality',
      decision: 'GO',
      subject: fuse,
      data: { rail: 'x402', tool: 'get-sum' },
    });

    const held = (await p.client.callTool({ name: 'get-sum', arguments: { a: 60, b: 1 } })) as CallToolResult;
    expect(held.isError).toBe(true);
    expect(textOf(held)).toMatch(/HOLD for review/);
    expect(gateOf(held)).toMatchObject({ decision: 'HOLD', hold: { rule: { id: 'review_threshold' }, fields: expect.any(Array) } });
    // The tool error names the review the HOLD opened, for the agent (or its person) to follow.
    const reviewId = (gateOf(held) as { review_id?: string }).review_id!;
    expect(reviewId).toMatch(/^rev_/);
    expect(gateOf(held)).toMatchObject({ review_url: `${s.config.BASE_URL}/v1/reviews/${reviewId}` });
    expect(textOf(held)).toContain(`review ${reviewId}`);
    const over = (await p.client.callTool({ name: 'get-sum', arguments: { a: 5000, b: 1 } })) as CallToolResult;
    expect(gateOf(over)).toMatchObject({ decision: 'NO_GO' });
    expect((await agent.receipt(gateOf(over).receipt_id!)).payload).toMatchObject({
      decision: 'NO_GO',
      data: { rule: 'mandate_limit', tool: 'get-sum' },
    });

    expect(p.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual(['tools/call get-tiny-image', 'tools/call get-sum']);
    expect(p.stderr()).toMatch(/held get-sum: HOLD: /);
    // Neither classified: every tool called is in the file.
    expect(await accountReceipts(s.ctx.ledger.read, accountId, { kind: 'classify', limit: 100 })).toHaveLength(classified);
  });

  it('refuses every call when the gate does not answer in time (--gate-timeout), and still passes the rest', async () => {
    // A gate that takes the connection and never answers.
    const silent = createNetServer((socket) => socket.on('error', () => undefined).resume());
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    open.push({ close: () => new Promise<void>((r) => silent.close(() => r())) });
    const p = await proxied({
      gateUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      kinds: { echo: null },
      gateTimeout: 1,
    });
    const refused = (await p.client.callTool({ name: 'echo', arguments: { message: 'hi' } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(gateOf(refused)).toMatchObject({ decision: null, reason: expect.stringMatching(/^the gate could not be reached: .*timeout/) });
    expect(textOf(refused)).toMatch(/fail closed/);
    expect((await p.client.listResources()).resources.length).toBeGreaterThan(0);
    expect(p.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual([]);
    expect(p.stderr()).toMatch(/refused echo: fail closed: the gate could not be reached/);
  });

  it("refuses a gate answering a problem (a key it does not know), and keeps the gate's key from the upstream", async () => {
    const bad = await proxied({ key: 'fg_live_not_a_key' });
    const refused = (await bad.client.callTool({ name: 'get-env', arguments: {} })) as CallToolResult;
    expect(gateOf(refused).reason).toMatch(/401 unknown_key/);
    expect(bad.upstreamCalls().filter((l) => l.startsWith('tools/call'))).toEqual([]);

    const { client } = shared;
    const env = textOf((await client.callTool({ name: 'get-env', arguments: {} })) as CallToolResult);
    expect(env).toContain('FUSEGATE_URL');
    expect(env).not.toContain('FUSEGATE_KEY');
    expect(env).not.toContain(agentKey);
  });

  it('stops before serving on a kinds file that does not parse (naming the tool), without an upstream or a key', async () => {
    const dir = tempDir('fusegate-kinds-');
    writeFileSync(join(dir, 'kinds.json'), JSON.stringify({ pay: { rail: 'swift', transfer: {} } }));
    const r = await runCli(['proxy', '--fuse', fuse, '--kinds', join(dir, 'kinds.json'), '--', NODE, EVERYTHING], {
      FUSEGATE_URL: s.url,
      FUSEGATE_KEY: agentKey,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/kinds file .* is not valid at pay/);
    // The server's configuration is not the proxy's: a variable it never reads does not stop it.
    const none = await runCli(['proxy', '--fuse', fuse], { FUSEGATE_URL: s.url, FUSEGATE_KEY: agentKey, PORT: 'not-a-port' });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/the upstream is required/);
    const keyless = await runCli(['proxy', '--fuse', fuse, '--', NODE, EVERYTHING], { FUSEGATE_URL: s.url });
    expect(keyless.code).toBe(2);
    expect(keyless.stderr).toMatch(/set FUSEGATE_KEY/);
  });

  describe('over streamable HTTP', () => {
    let upstream: ChildProcess;
    let upstreamUrl: string;
    let forwarder: HttpServer;
    let forwarderUrl: string;
    const seen: string[] = [];
    const authorizations: Array<string | undefined> = [];

    beforeAll(async () => {
      const port = await freePort();
      upstream = spawn(NODE, [EVERYTHING, 'streamableHttp'], {
        env: { ...cleanEnv(), PORT: String(port) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      await lines(upstream.stderr).wait(/listening on port/);
      upstreamUrl = `http://127.0.0.1:${port}/mcp`;
      // Counts what reaches the upstream, and with which Authorization, then passes it on as it is.
      forwarder = createHttpServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          if (body.length) {
            for (const m of [JSON.parse(body.toString())].flat() as Array<{ id?: unknown; method?: string; params?: { name?: string } }>) {
              if (m.id !== undefined && m.method) seen.push(m.method === 'tools/call' ? `tools/call ${m.params?.name}` : m.method);
            }
          }
          authorizations.push(req.headers.authorization);
          const up = httpRequest({ host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers }, (r) => {
            res.writeHead(r.statusCode!, r.headers);
            r.pipe(res);
          });
          up.end(body);
        });
      });
      await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', () => r()));
      forwarderUrl = `http://127.0.0.1:${(forwarder.address() as AddressInfo).port}/mcp`;
    });
    afterAll(async () => {
      forwarder.closeAllConnections();
      await new Promise<void>((r) => forwarder.close(() => r()));
      upstream.kill('SIGINT');
    });

    it('fronts an HTTP upstream (--upstream URL) with its Authorization from the environment: tools unchanged, DEAD refused before the upstream', async () => {
      const directHttp = await agentClient(new StreamableHTTPClientTransport(new URL(upstreamUrl)));
      open.push(directHttp);
      const transport = new StdioClientTransport({
        command: NODE,
        args: ['src/cli.ts', 'proxy', '--fuse', fuse, '--upstream', forwarderUrl],
        env: { ...cleanEnv(), FUSEGATE_URL: s.url, FUSEGATE_KEY: agentKey, FUSEGATE_UPSTREAM_AUTHORIZATION: 'Bearer upstream-token' },
        stderr: 'pipe',
        cwd: REPO,
      });
      const client = await agentClient(transport);
      open.push(client);
      expect(await client.listTools()).toEqual(await directHttp.listTools());
      const ok = (await client.callTool({ name: 'echo', arguments: { message: 'over http' } })) as CallToolResult;
      expect(textOf(ok)).toBe('Echo: over http');
      expect(gateOf(ok).decision).toBe('PERMIT');
      await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.1, steps: 2 } }, undefined, withProgress);
      expect(client.progress).toEqual([1, 2]);

      await agent.blowFuse(fuse);
      expect(gateOf((await client.callTool({ name: 'echo', arguments: { message: 'no' } })) as CallToolResult).decision).toBe('DENY');
      expect(seen.filter((l) => l.startsWith('tools/call'))).toEqual(['tools/call echo', 'tools/call trigger-long-running-operation']);
      expect(authorizations.length).toBeGreaterThan(0);
      expect(authorizations.every((a) => a === 'Bearer upstream-token')).toBe(true);
    });

    it('serves streamable HTTP itself (--listen), on loopback, for a client of its own', async () => {
      const dir = tempDir('fusegate-listen-');
      const log = join(dir, 'upstream.log');
      const proxy = spawn(
        NODE,
        ['src/cli.ts', 'proxy', '--fuse', fuse, '--listen', '0', '--', NODE, COUNTED, log, NODE, EVERYTHING, 'stdio'],
        {
          env: { ...cleanEnv(), FUSEGATE_URL: s.url, FUSEGATE_KEY: agentKey },
          stdio: ['ignore', 'ignore', 'pipe'],
          cwd: REPO,
        },
      );
      open.push({ close: async () => void proxy.kill('SIGTERM') });
      const url = (await lines(proxy.stderr).wait(/listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/))[1]!;
      const client = await agentClient(new StreamableHTTPClientTransport(new URL(url)));
      open.push(client);
      expect(await client.listTools()).toEqual(await direct.listTools());
      const ok = (await client.callTool(
        { name: 'trigger-long-running-operation', arguments: { duration: 0.1, steps: 3 } },
        undefined,
        withProgress,
      )) as CallToolResult;
      expect(gateOf(ok).decision).toBe('PERMIT');
      expect(client.progress).toEqual([1, 2, 3]);
      await agent.blowFuse(fuse);
      expect(gateOf((await client.callTool({ name: 'echo', arguments: { message: 'no' } })) as CallToolResult).decision).toBe('DENY');
      expect(
        readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .filter((l) => l.startsWith('tools/call')),
      ).toEqual(['tools/call trigger-long-running-operation']);
      // A page of another site pointing a browser at the proxy (DNS rebinding) names another host: refused.
      const rebound = await new Promise<number>((resolve, reject) =>
        httpRequest(url, { method: 'POST', headers: { host: 'attacker.invalid', 'content-type': 'application/json' } }, (r) =>
          resolve(r.resume().statusCode!),
        )
          .on('error', reject)
          .end('{}'),
      );
      expect(rebound).toBe(403);
    });
  });
});

/**
 * The MCP endpoint through the official SDK client over real HTTP.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpTools } from '../src/api/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type ToolResult = { isError?: boolean; content: Array<{ type: string; text?: string }>; structuredContent?: Record<string, unknown> };

async function connect(s: TestServer, key?: string): Promise<Client> {
  const client = new Client({ name: 'fusegate-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), {
    requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : {},
  });
  await client.connect(transport);
  return client;
}

/** Arguments for a tool that its schema accepts: the declared example with its placeholder ids made concrete, or a fixture. */
const FIXTURES: Record<string, Record<string, unknown>> = {
  receipt_get: { receipt_id: 'rcpt_example' },
  receipt_verify: { receipt: 'e30.e30.e30' },
  fuse_blow: { fuse_id: 'fuse_example' },
  fuse_charge: { fuse_id: 'fuse_example' },
  fuse_lookup: { fuse_id: 'fuse_example' },
  ocsp: { fuse_id: 'fuse_example' },
  prefinality_evaluate: { rail: 'x402', transfer: { amount: '0.25', currency: 'USDC' } },
  demo_prefinality_evaluate: { rail: 'rtp', transfer: { amount: '0.25', currency: 'USD' } },
  prefinality_verify: { receipt: 'e30.e30.e30' },
  rtp_gate: { receipt: 'e30.e30.e30', payment_order: { amount: '0.25', currency: 'USD', account_number: '000123', routing_number: '021000021', counterparty: 'acme' } },
  pas_license: { license_id: 'lic_acme_2026' },
  pas_license_charge: { license_id: 'lic_acme_2026' },
  pas_license_blow: { license_id: 'lic_acme_2026' },
  pas_exclusion: { job_id: 'job_1042' },
  pas_bind_appendix: { job_id: 'job_1042' },
  astl_lookup: { entity: 'agent:acme-buyer' },
  absence_verify: { witness: 'e30.e30.e30', proof: { present: false, tree_size: 0 } },
  conformity_pack: { pack_id: 'pack_example' },
  foundry_projection: { tenant_id: 'acme-mga' },
  inference_session: { session_id: 'sess_example' },
};
function argumentsFor(name: string, example: unknown): Record<string, unknown> {
  if (FIXTURES[name]) return FIXTURES[name];
  return JSON.parse(JSON.stringify(example ?? {}).replace(/…/g, 'example')) as Record<string, unknown>;
}

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * POSTs `body` to /mcp on a connection of its own, with Content-Length or
 * chunked, and resolves once the answer has been read and the server has
 * closed the connection (or the answer has been read and `keepsOpen`).
 */
function rawPost(url: string, body: Buffer, o: { chunked: boolean; keepsOpen?: boolean }): Promise<RawAnswer> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    let answer: RawAnswer | undefined;
    let closed = false;
    const settle = () => {
      if (!answer || !(closed || o.keepsOpen)) return;
      resolve(answer);
      req.destroy();
    };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(o.chunked ? {} : { 'content-length': String(body.length) }) };
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        answer = { status: res.statusCode!, headers: res.headers, body: text };
        settle();
      });
    });
    // The server may close while the rest of a refused body is still being sent: that is the point.
    req.on('error', () => undefined);
    req.on('socket', (socket) =>
      socket.on('close', () => {
        closed = true;
        if (!answer) reject(new Error(`closed without an answer (${body.length} bytes, ${o.chunked ? 'chunked' : 'content-length'})`));
        settle();
      }),
    );
    if (!o.chunked) return void req.end(body);
    for (let at = 0; at < body.length; at += 16_384) req.write(body.subarray(at, at + 16_384));
    req.end();
  });
}

describe('MCP endpoint', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('mcp');
  });
  afterAll(() => s.stop());

  it('offers public and demo tools without a key, and runs a refusal as a tool result', async () => {
    const client = await connect(s);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toContain('demo_hop');
    expect(names).toContain('receipt_verify');
    expect(names).not.toContain('fuse_hop');
    // The input schema is the route's zod schema.
    const demoHop = tools.find((t) => t.name === 'demo_hop')!;
    expect(demoHop.inputSchema.properties).toHaveProperty('fuse_id');

    const dead = (await client.callTool({ name: 'demo_hop', arguments: { fuse_id: 'fuse_drill_dead' } })) as ToolResult;
    expect(dead.isError).toBeFalsy();
    expect(dead.structuredContent).toMatchObject({ status: 200, verdict: false, decision: 'DENY', state: 'DEAD' });

    // Arguments the tool's schema refuses are a JSON-RPC error -32602 (invalid params) naming the field, not a crash.
    await expect(client.callTool({ name: 'demo_hop', arguments: { fuse_id: 'no such fuse!' } })).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('fuse_id') });
    await expect(client.callTool({ name: 'demo_hop', arguments: { fuse_id: 7 } })).rejects.toMatchObject({ code: -32602 });
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    // A keyed tool without a key is not offered.
    await expect(client.callTool({ name: 'fuse_hop', arguments: { fuse_id: 'fuse_drill_live' } })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  it('offers keyed tools with a key, charged exactly as over HTTP', async () => {
    const fuse = (await (await s.fetch('/v1/fuses', { key: key.secret, json: {} })).json()) as { fuse_id: string };
    const client = await connect(s, key.secret);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['fuse_hop', 'fuse_lookup', 'act', 'classify', 'prefinality_evaluate', 'demo_hop']));

    const hop = (await client.callTool({ name: 'fuse_hop', arguments: { fuse_id: fuse.fuse_id, action: { kind: 'pay' } } })) as ToolResult;
    expect(hop.structuredContent).toMatchObject({ fuse_id: fuse.fuse_id, ok: true, verdict: true, decision: 'PERMIT' });
    const receiptId = hop.structuredContent!.receipt_id as string;

    // The receipt is real: the public verifier tool accepts it.
    const evidence = (await (await s.fetch(`/v1/receipts/${receiptId}`, { headers: { accept: 'application/json' } })).json()) as Record<string, unknown>;
    const verified = (await client.callTool({ name: 'receipt_verify', arguments: { receipt: evidence } })) as ToolResult;
    expect(verified.structuredContent).toMatchObject({ valid: true });

    const other = (await client.callTool({ name: 'fuse_hop', arguments: { fuse_id: 'fuse_someone_elses' } })) as ToolResult;
    expect(other.isError).toBe(true);
    expect(JSON.parse(other.content[0]!.text!)).toMatchObject({ status: 404, code: 'unknown_fuse' });

    const me = (await (await s.fetch('/v1/me', { key: key.secret })).json()) as { usage: { hops_used: number } };
    expect(me.usage.hops_used).toBe(1);
    await client.close();
  });

  it('calls every tool it lists without a protocol error', async () => {
    const client = await connect(s, key.secret);
    const declared = mcpTools(s.app.router);
    const examples = new Map(declared.map((t) => [t.name, argumentsFor(t.name, t.route.doc?.example)]));
    // Every argument set is one the tool's own schema accepts (else the call would be -32602).
    for (const t of declared) expect(t.input.safeParse(examples.get(t.name)).error, t.name).toBeUndefined();
    const { tools } = await client.listTools();
    expect(tools.length).toBe(examples.size);
    for (const tool of tools) {
      const r = (await client.callTool({ name: tool.name, arguments: examples.get(tool.name) as Record<string, unknown> })) as ToolResult;
      expect(r.content.length, tool.name).toBeGreaterThan(0);
      expect(typeof r.content[0]!.text, tool.name).toBe('string');
      if (tool.name === 'foundry_pipeline_run') expect(r.structuredContent, tool.name).toMatchObject({ tenant_id: 'acme-mga', charge: { sku: 'foundry_pipeline' } });
      if (tool.name === 'conformity_generate') expect((r.structuredContent as { pack: { category: { category_id: string } } }).pack.category.category_id).toBe('insurance');
    }
    await client.close();
  });

  it('answers a body over the limit 413 problem+json at once, whatever its size and framing, and closes the connection', async () => {
    const limit = s.config.MAX_BODY_BYTES;
    for (const size of [limit + 1, 131_073, 1_048_576, 8_388_608]) {
      for (const chunked of [false, true]) {
        const r = await rawPost(s.url, Buffer.alloc(size, ' '), { chunked });
        const label = `${size} bytes, ${chunked ? 'chunked' : 'content-length'}`;
        expect(r.status, label).toBe(413);
        expect(r.headers['content-type'], label).toBe('application/problem+json');
        expect(r.headers.connection, label).toBe('close');
        expect(JSON.parse(r.body), label).toMatchObject({ status: 413, code: 'body_too_large', limit_bytes: limit });
      }
    }
    // A JSON-RPC request of exactly the limit is read whole and answered by the MCP server.
    const init = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    for (const chunked of [false, true]) {
      const r = await rawPost(s.url, Buffer.from(init + ' '.repeat(limit - init.length)), { chunked, keepsOpen: true });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ id: 1, result: { protocolVersion: '2025-11-25' } });
    }
  });

  it('follows the transport rules: Origin, Accept, methods, and a bad key', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
    const accept = 'application/json, text/event-stream';
    const evil = await s.fetch('/mcp', { json: init, headers: { accept, origin: 'http://evil.example' } });
    expect(evil.status).toBe(403);
    expect(evil.headers.get('content-type')).toMatch(/problem\+json/);
    const ours = await s.fetch('/mcp', { json: init, headers: { accept, origin: new URL(s.config.BASE_URL).origin } });
    expect(ours.status).toBe(200);
    expect(((await ours.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe('2025-11-25');
    expect((await s.fetch('/mcp', { json: init, headers: { accept: 'application/json' } })).status).toBe(406);
    const get = await s.fetch('/mcp');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await s.fetch('/mcp', { json: init, headers: { accept }, key: 'fg_live_nope' })).status).toBe(401);
  });

  it('describes itself at /.well-known/mcp.json', async () => {
    const doc = (await (await s.fetch('/.well-known/mcp.json')).json()) as { endpoint: string; protocol_version: string; tools: Array<{ name: string; auth: string }> };
    expect(doc.endpoint).toBe(`${s.config.BASE_URL}/mcp`);
    expect(doc.protocol_version).toBe('2025-11-25');
    expect(doc.tools.find((t) => t.name === 'fuse_hop')?.auth).toBe('key');
    expect(doc.tools.find((t) => t.name === 'demo_hop')?.auth).toBe('demo');
  });
});

/**
 * The MCP endpoint through the official SDK client over real HTTP.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { H3 } from 'h3';
import { request, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpTools, pathParams, type McpTool } from '../src/api/mcp.ts';
import { Router } from '../src/api/router.ts';
import { derivedToolName, toolName } from '../src/api/tool-names.ts';
import { chargesOf } from './support/ledger-reads.ts';
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
  rtp_gate: {
    receipt: 'e30.e30.e30',
    payment_order: { amount: '0.25', currency: 'USD', account_number: '000123', routing_number: '021000021', counterparty: 'acme' },
  },
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
/** A subscriber URL that is never called (RFC 6761: .invalid never resolves). */
const NEVER_CALLED = 'https://hooks.fusegate.invalid/events';
function argumentsFor(tool: McpTool): Record<string, unknown> {
  const fixture = FIXTURES[tool.name];
  if (fixture) return fixture;
  const example = JSON.parse(JSON.stringify(tool.route.doc?.example ?? {}).replace(/…/g, 'example')) as Record<string, unknown>;
  // The declared examples name documentation hosts: a test sends only URLs that are never called.
  if (typeof example.url === 'string') example.url = NEVER_CALLED;
  return { ...Object.fromEntries(pathParams(tool.route.path).map((p) => [p, `${p.replace(/_id$/, '')}_example`])), ...example };
}

/** The tool names clients used before every keyed operation was a tool: none of them may change. */
const NAMES_CLIENTS_USE = [
  'absence_verify',
  'absence_witness',
  'act',
  'astl_lookup',
  'astl_publish',
  'astl_verify',
  'classify',
  'clear_exposure',
  'clear_usage',
  'conformity_generate',
  'conformity_pack',
  'counterfactual_replay',
  'demo_act',
  'demo_hop',
  'demo_lookup',
  'demo_pas_a_pre_bind',
  'demo_pas_bind_check',
  'demo_pas_mga_authority',
  'demo_prefinality_evaluate',
  'depository_attest',
  'execute_gate',
  'execute_gate_bind',
  'execute_gate_demo',
  'foundry_pipeline_run',
  'foundry_projection',
  'fuse_blow',
  'fuse_charge',
  'fuse_create',
  'fuse_hop',
  'fuse_lookup',
  'fuses_list',
  'inference_chat',
  'inference_session',
  'keys_create',
  'keys_list',
  'me',
  'nap_usage',
  'ocsp',
  'operator_checkout',
  'oracle_aggregate',
  'orn_declare',
  'orn_sharp',
  'pas_a_pre_bind',
  'pas_b_pre_bind',
  'pas_bind_appendix',
  'pas_bind_check',
  'pas_exclusion',
  'pas_license',
  'pas_license_blow',
  'pas_license_charge',
  'pas_licenses',
  'pas_mga_authority',
  'pas_ticket_redeem',
  'pas_tickets',
  'pdtr_bind_payment',
  'prefinality_evaluate',
  'prefinality_verify',
  'receipt_get',
  'receipt_verify',
  'relay_enroll',
  'restraint',
  'rtp_gate',
  'spoliation_seal',
  'trigger_fire',
  'trigger_publish',
];

/** The keyed operations that had no tool (issue 45 item 12), by the names the rule gives them (docs/agents-and-operators.md). */
const NAMES_ADDED = [
  'fuse_heartbeat',
  'receipts_verify_pull',
  'fuses_panic',
  'spoliation_seal_matter',
  'foundry_parametric_run',
  'clear_before',
  'inference_reasoning_seal',
  'issuer_pays_listings_create',
  'gam_credits_purchase',
  'gam_credits_balance',
  'signal_mandates_create',
  'signal_patterns',
  'signal_trigger_webhooks_create',
  'signal_trigger_webhooks',
  'signal_trigger_webhooks_deliveries_retry',
  'alerts_create',
  'alerts',
  'alerts_remove',
  'receipts_openings',
  'keys_get',
  'keys_revoke',
  'keys_rotate',
  'keys_limit',
  'keys_expiry',
  'pas_grants',
  'pas_grants_create',
  'pas_grants_revoke',
];

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
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(o.chunked ? {} : { 'content-length': String(body.length) }),
    };
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
  let key: { id: string; secret: string; accountId: string };
  beforeAll(async () => {
    // Subscriber URLs here are .invalid hosts (never called), which the public-address check would refuse as unresolvable.
    s = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' });
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
    await expect(client.callTool({ name: 'demo_hop', arguments: { fuse_id: 'no such fuse!' } })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('fuse_id'),
    });
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
    const evidence = (await (await s.fetch(`/v1/receipts/${receiptId}`, { headers: { accept: 'application/json' } })).json()) as Record<
      string,
      unknown
    >;
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
    const examples = new Map(declared.map((t) => [t.name, argumentsFor(t)]));
    // Every argument set is one the tool's own schema accepts (else the call would be -32602).
    for (const t of declared) expect(t.input.safeParse(examples.get(t.name)).error, t.name).toBeUndefined();
    const { tools } = await client.listTools();
    expect(tools.length).toBe(examples.size);
    for (const tool of tools) {
      const r = (await client.callTool({ name: tool.name, arguments: examples.get(tool.name) as Record<string, unknown> })) as ToolResult;
      expect(r.content.length, tool.name).toBeGreaterThan(0);
      expect(typeof r.content[0]!.text, tool.name).toBe('string');
      if (tool.name === 'foundry_pipeline_run')
        expect(r.structuredContent, tool.name).toMatchObject({ tenant_id: 'acme-mga', charge: { sku: 'foundry_pipeline' } });
      if (tool.name === 'conformity_generate')
        expect((r.structuredContent as { pack: { category: { category_id: string } } }).pack.category.category_id).toBe('insurance');
    }
    await client.close();
  });

  it('offers every keyed operation as a tool: the name its declaration gives, or the one the rule derives from it', async () => {
    const operator = await connect(s, key.secret);
    const names = new Set((await operator.listTools()).tools.map((t) => t.name));
    const keyed = s.app.router.routes.filter((r) => r.doc?.auth === 'key');
    expect(keyed.length).toBeGreaterThan(NAMES_ADDED.length);
    for (const r of keyed) {
      const name = toolName(r)!;
      expect(names.has(name), `${r.method} ${r.path} as ${name}`).toBe(true);
      if (!r.doc!.tool) expect(name).toBe(derivedToolName(r));
    }
    for (const name of [...NAMES_CLIENTS_USE, ...NAMES_ADDED]) expect(names.has(name), name).toBe(true);
    await operator.close();

    // An agent key is offered every keyed tool but the operator's, as its declaration's role says.
    const agentKey = await s.newKey('mcp-agent', 1000, 'agent', key.accountId);
    const agent = await connect(s, agentKey.secret);
    const agentNames = new Set((await agent.listTools()).tools.map((t) => t.name));
    for (const r of keyed)
      expect(agentNames.has(toolName(r)!), `${toolName(r)} (${r.doc!.role ?? 'agent'})`).toBe(r.doc!.role !== 'operator');
    await agent.close();

    // Discovery lists the same tools, each keyed one with its role.
    const doc = (await (await s.fetch('/.well-known/mcp.json')).json()) as {
      tools: Array<{ name: string; auth: string; role?: string; method: string; path: string }>;
    };
    expect(new Set(doc.tools.map((t) => t.name))).toEqual(names);
    for (const r of keyed)
      expect(doc.tools.find((t) => t.name === toolName(r))).toMatchObject({
        auth: 'key',
        role: r.doc!.role ?? 'agent',
        method: r.method,
        path: r.path,
      });
  });

  it('runs the added tools end to end with the session key, charged and refused as over HTTP', async () => {
    const opsKey = await s.newKey('mcp-ops', 1000, 'operator');
    const agentKey = await s.newKey('mcp-agent-2', 1000, 'agent', opsKey.accountId);
    const ops = await connect(s, opsKey.secret);
    const agent = await connect(s, agentKey.secret);
    const call = async (client: Client, name: string, args: Record<string, unknown>) => {
      const r = (await client.callTool({ name, arguments: args })) as ToolResult;
      return r.structuredContent as Record<string, any>;
    };
    const charged = async (receiptId: string) =>
      (await chargesOf(s.ctx.ledger.read, agentKey.id)).filter((c) => c.ref === receiptId).map((c) => [c.sku, c.amount_micros]);

    const fuse = (await call(ops, 'fuse_create', {})).fuse_id as string;
    const beat = await call(agent, 'fuse_heartbeat', { fuse_id: fuse });
    expect(beat).toMatchObject({ status: 200, fuse_id: fuse, state: 'LIVE' });
    expect(await charged(beat.receipt_id)).toEqual([['heartbeat', 100_000]]);
    const pull = await call(agent, 'receipts_verify_pull', { receipt_id: beat.receipt_id });
    expect(pull).toMatchObject({ status: 200, pulled: beat.receipt_id });
    expect(await charged(pull.receipt_id)).toEqual([['verify_pull', 50_000]]);
    const cleared = await call(agent, 'clear_before', { tier: 'act', fuse_id: fuse, action: { kind: 'pay' } });
    expect(cleared).toMatchObject({ status: 200, tier: 'act', decision: 'PERMIT' });
    expect(await charged(cleared.receipt_id)).toEqual([['clear_before_act', 10_000_000]]);
    expect(await call(agent, 'gam_credits_balance', {})).toMatchObject({ status: 200 });

    // An agent may blow its fuse (panic), never manage keys.
    const panic = await call(agent, 'fuses_panic', { fuse_id: fuse, reason: 'wiring funds in a loop' });
    expect(panic).toMatchObject({ status: 200, fuse_id: fuse, state: 'DEAD' });
    expect(await call(agent, 'fuse_lookup', { fuse_id: fuse })).toMatchObject({ state: 'DEAD' });
    const openings = await call(agent, 'receipts_openings', { receipt_id: panic.receipt_id });
    expect(openings.status).toBe(200);
    expect(JSON.stringify(openings)).toContain('wiring funds in a loop');

    const made = await call(ops, 'keys_create', { name: 'made over mcp' });
    // (A key's own `status` field is its state: it stands over the HTTP status in structuredContent.)
    expect(await call(ops, 'keys_get', { key_id: made.id })).toMatchObject({
      object: 'api_key',
      id: made.id,
      name: 'made over mcp',
      status: 'active',
    });
    expect(await call(ops, 'keys_limit', { key_id: made.id, hop_limit: 5 })).toMatchObject({ id: made.id, hop_limit: 5 });
    await expect(agent.callTool({ name: 'keys_revoke', arguments: { key_id: made.id } })).rejects.toMatchObject({
      code: -32602,
      data: { code: 'operator_key_required' },
    });
    const overHttp = await s.fetch(`/v1/keys/${made.id}/revoke`, { method: 'POST', key: agentKey.secret });
    expect([overHttp.status, ((await overHttp.json()) as { code: string }).code]).toEqual([403, 'operator_key_required']);
    expect((await s.fetch('/v1/me', { key: made.secret })).status).toBe(200);
    expect(await call(ops, 'keys_revoke', { key_id: made.id })).toMatchObject({ id: made.id, status: 'revoked' });
    expect((await s.fetch('/v1/me', { key: made.secret })).status).toBe(401);

    const alert = await call(ops, 'alerts_create', { url: NEVER_CALLED, events: ['hop.denied'], fuse_id: fuse });
    expect(alert).toMatchObject({ status: 201, url: NEVER_CALLED, events: ['hop.denied'] });
    expect(JSON.stringify(await call(ops, 'alerts', {}))).toContain(alert.id);
    expect(await call(ops, 'alerts_remove', { alert_id: alert.id })).toMatchObject({ status: 200 });

    const grant = await call(ops, 'pas_grants_create', { name: 'Acme MGA', lines: ['cyber'], states: ['CA'], max_premium: '1000.00' });
    expect(grant).toMatchObject({ status: 201, object: 'authority_grant' });
    expect(JSON.stringify(await call(ops, 'pas_grants', {}))).toContain(grant.grant_id);
    expect(await call(ops, 'pas_grants_revoke', { grant_id: grant.grant_id })).toMatchObject({
      status: 200,
      grant_id: grant.grant_id,
      revoked: true,
    });
    await ops.close();
    await agent.close();
  });

  it('refuses, when the routes are registered, two operations that would be one tool', () => {
    const router = new Router(new H3());
    const doc = { summary: 'x', auth: 'key', tag: 't' } as const;
    router.on('POST', '/v1/widgets/:widget_id/spin', () => null, doc);
    expect(() => router.on('POST', '/api/v1/widgets/spin', () => null, doc)).toThrow(
      'POST /v1/widgets/:widget_id/spin and POST /api/v1/widgets/spin are both the MCP tool widgets_spin',
    );
    router.on('POST', '/api/v1/widgets/spin', () => null, { ...doc, tool: 'widgets_spin_all' });
    expect(toolName(router.routes.at(-1)!)).toBe('widgets_spin_all');
  });

  it('answers arguments that are not an object with -32602 naming the problem', async () => {
    const rpc = async (params: unknown) => {
      const r = await s.fetch('/mcp', {
        json: { jsonrpc: '2.0', id: 7, method: 'tools/call', params },
        headers: { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
      });
      expect(r.status).toBe(200);
      return (await r.json()) as { id: number; error?: { code: number; message: string } };
    };
    for (const [args, kind] of [
      [null, 'null'],
      [[], 'an array'],
      ['{"fuse_id":"fuse_drill_live"}', 'a string'],
      [7, 'a number'],
    ] as const) {
      const answer = await rpc({ name: 'demo_hop', arguments: args });
      expect(answer.id).toBe(7);
      expect(answer.error, kind).toEqual({
        code: -32602,
        message: `params.arguments must be an object of the tool's arguments (or left out), not ${kind}`,
      });
    }
    expect((await rpc({ arguments: {} })).error).toMatchObject({ code: -32602, message: expect.stringContaining('params.name') });
    // Left out, the arguments are the empty object.
    expect((await rpc({ name: 'demo_lookup' })).error).toBeUndefined();
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
    const init = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    for (const chunked of [false, true]) {
      const r = await rawPost(s.url, Buffer.from(init + ' '.repeat(limit - init.length)), { chunked, keepsOpen: true });
      expect(r.status).toBe(200);
      expect(JSON.parse(r.body)).toMatchObject({ id: 1, result: { protocolVersion: '2025-11-25' } });
    }
  });

  it('follows the transport rules: Origin, Accept, methods, and a bad key', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    };
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
    const doc = (await (await s.fetch('/.well-known/mcp.json')).json()) as {
      endpoint: string;
      protocol_version: string;
      tools: Array<{ name: string; auth: string }>;
    };
    expect(doc.endpoint).toBe(`${s.config.BASE_URL}/mcp`);
    expect(doc.protocol_version).toBe('2025-11-25');
    expect(doc.tools.find((t) => t.name === 'fuse_hop')?.auth).toBe('key');
    expect(doc.tools.find((t) => t.name === 'demo_hop')?.auth).toBe('demo');
  });
});

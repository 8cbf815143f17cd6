/**
 * Every door is built from the operations' declarations (RouteDoc): this test
 * walks the declaration list of a running server and checks each door for
 * each operation, so that no door can drift from it: the route answers, the
 * OpenAPI entry matches (auth, tool, x402), the MCP tool exists (every keyed
 * operation is one, with the same input schema), the x402 discovery lists exactly
 * the operations that take a payment, and the typed client has every
 * operation and reaches its route on the real server.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientOperationsSource } from '../src/api/client-gen.ts';
import { describeRoutes } from '../src/api/describe.ts';
import { jsonSchema } from '../src/api/openapi.ts';
import { FuseGateClient, FuseGateError, OPERATIONS, type OperationName } from '../src/client.ts';
import { loadConfig } from '../src/config.ts';
import { paidRouteOf } from '../src/payments/x402/resources.ts';
import { toolName } from '../src/api/tool-names.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type J = Record<string, any>;

let s: TestServer;
let openapi: J;
let tools: Map<string, J>;

const X402_ENV = {
  X402_PAY_TO: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  X402_NETWORK: 'eip155:84532',
  X402_ASSET: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
  // Never called here: no payment is presented.
  X402_FACILITATOR_URL: 'http://127.0.0.1:9/facilitator',
};

beforeAll(async () => {
  s = await startTestServer(X402_ENV);
  openapi = (await (await s.fetch('/openapi.json')).json()) as J;
  const key = await s.newKey('walk');
  const client = new Client({ name: 'walk', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key.secret}` } } }),
  );
  tools = new Map((await client.listTools()).tools.map((t) => [t.name, t as J]));
  await client.close();
}, 60_000);
afterAll(() => s?.stop());

const concrete = (path: string) => path.replace(/:([A-Za-z_]+)/g, 'x');

describe('every operation, through every door', () => {
  it('each declared operation is served, described in OpenAPI as declared, offered over MCP when keyed or named a tool', async () => {
    const routes = s.app.router.routes.filter((r) => r.doc);
    expect(routes.length).toBeGreaterThan(100);
    for (const r of routes) {
      const doc = r.doc!;
      const name = `${r.method} ${r.path}`;
      // The route exists: whatever it answers, it is not the fallback's 404/405 for an unknown route.
      const res = await fetch(s.url + concrete(r.path), { method: r.method, redirect: 'manual', headers: { accept: 'application/json' } });
      const text = await res.text();
      expect(res.status, name).not.toBe(405);
      expect(text, name).not.toContain('route_not_found');

      const op = openapi.paths[r.path.replace(/(?:\*\*)?:([A-Za-z_]+)/g, '{$1}')]?.[r.method.toLowerCase()] as J;
      expect(op, name).toBeDefined();
      expect(op.summary, name).toBe(doc.summary);
      const paid = paidRouteOf(r.method, r.path, doc);
      expect(op.security, name).toEqual(doc.auth === 'key' ? [{ bearer: [] }, ...(paid ? [{ x402: [] }] : [])] : []);
      const toolOf = toolName(r);
      expect(op['x-mcp-tool'], name).toBe(toolOf);
      // Every keyed operation is a tool; a public one when it names one.
      expect(toolOf !== undefined, name).toBe(doc.auth === 'key' || doc.tool !== undefined);

      if (toolOf) {
        const tool = tools.get(toolOf);
        expect(tool, `${name}: tool ${toolOf}`).toBeDefined();
        const own = r.method === 'GET' ? doc.query : doc.body;
        const props = Object.keys((own ? jsonSchema(own, 'input').properties : {}) ?? {});
        for (const p of props) expect(Object.keys(tool!.inputSchema.properties ?? {}), `${toolOf} input`).toContain(p);
      }
    }
    // No tool without a declaration.
    const declared = new Set(routes.flatMap((r) => toolName(r) ?? []));
    expect([...tools.keys()].filter((t) => !declared.has(t))).toEqual([]);
  });

  it('the x402 discovery documents list exactly the operations that take a payment, at their toll', async () => {
    const paid = s.app.router.routes.flatMap((r) => paidRouteOf(r.method, r.path, r.doc) ?? []);
    expect(paid.length).toBeGreaterThanOrEqual(3);
    for (const p of ['/.well-known/x402.json', '/.well-known/x402', '/.well-known/x402-bazaar.json']) {
      const b = (await (await s.fetch(p)).json()) as J;
      const list = (b.resources ?? b.listings) as J[];
      expect(
        list.map((x) => `${x.method} ${x.resource}`),
        p,
      ).toEqual(paid.map((x) => `${x.method} ${s.config.BASE_URL}${x.path}`));
    }
  });

  it("the typed client's operation table is written from the declarations and is current", () => {
    const routes = describeRoutes(loadConfig({})).routes;
    expect(readFileSync('src/client-operations.ts', 'utf8')).toBe(clientOperationsSource(routes));
    // A route serving a rest of the path (the C2SP tiles) is a file tree, not a client operation.
    const declared = s.app.router.routes.filter((r) => r.doc && r.path !== '/mcp' && !r.path.includes('*'));
    expect(Object.keys(OPERATIONS).length).toBe(declared.length);
  });

  it('the client calls every operation at its method and path, and a real one through its typed errors', async () => {
    const seen: string[] = [];
    const recording = new FuseGateClient({
      baseUrl: 'http://gate.test',
      fetch: (async (url: string | URL, init?: RequestInit) => {
        seen.push(`${init?.method} ${new URL(String(url)).pathname}`);
        return new Response('{}', { headers: { 'content-type': 'application/json' } });
      }) as typeof fetch,
    });
    for (const [name, op] of Object.entries(OPERATIONS)) {
      const input = Object.fromEntries(op.params.map((p) => [p, 'x']));
      await recording.call(name as OperationName, input as never);
    }
    expect(seen).toEqual(Object.values(OPERATIONS).map((op) => `${op.method} ${concrete(op.path)}`));

    const key = await s.newKey('client', 1000, 'agent');
    const gate = new FuseGateClient({ baseUrl: s.url, apiKey: key.secret });
    const me = await gate.call('me', {});
    expect(me.status).toBe(200);
    expect(me).toMatchObject({ role: 'agent' });
    const err = await gate.call('fuse_hop', { fuse_id: 'fuse_nobody_has' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FuseGateError);
    expect(err).toMatchObject({ status: 404, problem: { code: 'unknown_fuse' } });
  });
  it('every operation, called through the client against the real server, reaches its route: an answer, or its own problem for an empty input', async () => {
    const agent = await s.newKey('walk-agent', 100_000, 'agent');
    const operator = await s.newKey('walk-operator', 100_000, 'operator', agent.accountId);
    const clients = {
      key: new FuseGateClient({ baseUrl: s.url, apiKey: agent.secret }),
      operator: new FuseGateClient({ baseUrl: s.url, apiKey: operator.secret }),
      public: new FuseGateClient({ baseUrl: s.url }),
    };
    const outcomes: string[] = [];
    for (const [name, op] of Object.entries(OPERATIONS)) {
      const gate = op.auth === 'operator' ? clients.operator : op.auth === 'key' ? clients.key : clients.public;
      // Path parameters that name nothing, and an empty body or query: the route answers, or refuses that input itself.
      const input = Object.fromEntries(op.params.map((p) => [p, 'x']));
      let status: number;
      let code = '';
      try {
        status = (await gate.call(name as OperationName, input as never)).status;
      } catch (e) {
        expect(e, name).toBeInstanceOf(FuseGateError);
        status = (e as FuseGateError).status;
        code = (e as FuseGateError).problem.code;
      }
      outcomes.push(`${name} ${status} ${code}`);
      expect(status, `${name} (${op.method} ${op.path}): ${code}`).not.toBe(405);
      expect(code, name).not.toMatch(/^(route_not_found|method_not_allowed)$/);
      // The key each operation declares is accepted: no refusal of the caller itself.
      expect(status, `${name}: ${code}`).not.toBe(401);
      expect(code, name).not.toBe('operator_key_required');
    }
    // The walk did act: some operations answered 2xx to an empty input, others refused it with a 4xx problem of their own.
    expect(outcomes.filter((o) => / 2\d\d /.test(o)).length, outcomes.join('\n')).toBeGreaterThan(20);
    expect(outcomes.filter((o) => / 4\d\d \w/.test(o)).length, outcomes.join('\n')).toBeGreaterThan(20);
  });
});

/**
 * The OpenAPI description: valid 3.1.0 for an independent validator, generated
 * from every route, and consistent with /.well-known/gate.json both ways.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

type Op = {
  operationId: string;
  security: Array<Record<string, unknown>>;
  requestBody?: unknown;
  parameters: Array<Record<string, unknown>>;
};
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Op>> };

describe('OpenAPI description', () => {
  let s: TestServer;
  let doc: Doc;
  beforeAll(async () => {
    s = await startTestServer();
    doc = (await (await s.fetch('/openapi.json')).json()) as Doc;
  });
  afterAll(() => s.stop());

  it('is a valid OpenAPI 3.1.0 document, version 1.0.0', async () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('describes every registered route, each with its documentation', () => {
    const undocumented = s.app.router.routes.filter((r) => !r.doc).map((r) => `${r.method} ${r.path}`);
    expect(undocumented).toEqual([]);
    for (const r of s.app.router.routes) {
      const path = r.path.replace(/(?:\*\*)?:([A-Za-z_]+)/g, '{$1}');
      expect(doc.paths[path]?.[r.method.toLowerCase()], `${r.method} ${path}`).toBeDefined();
    }
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carries the request schema the handler parses with', () => {
    const hop = doc.paths['/v1/fuse/hop']!.post!;
    // A key, or an x402 payment instead (when the service has x402 configured).
    expect(hop.security).toEqual([{ bearer: [] }, { x402: [] }]);
    expect((hop as Record<string, unknown>)['x-mcp-tool']).toBe('fuse_hop');
    expect(doc.paths['/v1/me']!.get!.security).toEqual([{ bearer: [] }]);
    expect(JSON.stringify(hop.requestBody)).toContain('fuse_id');
    expect(hop.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    const lookup = doc.paths['/v1/fuse/lookup']!.get!;
    expect(lookup.parameters).toContainEqual(expect.objectContaining({ name: 'fuse_id', in: 'query', required: true }));
    expect(doc.paths['/demo/hop']!.post!.security).toEqual([]);
  });

  it('lists in /.well-known/gate.json every /v1/ and /demo/ operation, by the name the API description gives it', async () => {
    type Endpoint = { method: string; path: string; auth: string; url: string; operation?: string; extension?: boolean };
    const gate = (await (await s.fetch('/.well-known/gate.json')).json()) as { endpoints: Endpoint[] };
    const listed = (p: string) => p.startsWith('/v1/') || p.startsWith('/demo/');
    const fromGate = gate.endpoints
      .filter((e) => listed(e.path))
      .map((e) => `${e.method} ${e.path}`)
      .sort();
    const fromOpenApi = Object.entries(doc.paths)
      .filter(([path]) => listed(path))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(fromGate).toEqual(fromOpenApi);
    for (const e of gate.endpoints) {
      const op = doc.paths[e.path]?.[e.method.toLowerCase()];
      expect(op, `${e.method} ${e.path}`).toBeDefined();
      // One name: gate.json's operation is the OpenAPI operationId (and so the client's and the MCP tool's).
      expect(e.operation, `${e.method} ${e.path}`).toBe(op!.operationId);
      // Keyed in the description exactly when gate.json says a key (or x402 in its place).
      expect(e.auth === 'none', `${e.method} ${e.path}`).toBe(op!.security.length === 0);
      // Ours say whether x402 may stand in for the key; SPEC's rows keep SPEC's words (the hop's x402 past its limit is ours).
      if (e.extension) expect(e.auth === 'key or x402', `${e.method} ${e.path}`).toBe(op!.security.some((alt) => 'x402' in alt));
      expect(new URL(e.url).pathname.replace(/%7B/g, '{').replace(/%7D/g, '}')).toBe(e.path);
    }
    // SPEC 4.1's rows come first, as SPEC words them; the rest are marked ours.
    const specRows = gate.endpoints.filter((e) => !e.extension);
    expect(specRows).toHaveLength(28);
    expect(gate.endpoints.slice(0, 28)).toEqual(specRows);
    expect(specRows.find((e) => e.path === '/v1/prefinality/evaluate')).toMatchObject({
      method: 'POST',
      auth: 'key or x402',
      operation: 'prefinality_evaluate',
    });
    expect(specRows.find((e) => e.path === '/v1/ocsp')).toMatchObject({
      auth: 'key',
      purpose: 'alias of fuse lookup; 503 halt if unreachable',
    });
  });
  it('gives the pre-finality manifest the statuses and auth the evaluate operation declares', async () => {
    const manifest = (await (await s.fetch('/.well-known/prefinality.json')).json()) as {
      statuses: Record<string, string>;
      endpoints: Record<string, { url: string; auth: string }>;
    };
    const evaluate = doc.paths['/v1/prefinality/evaluate']!.post! as Op & { responses: Record<string, { description: string }> };
    for (const code of ['200', '403', '409']) expect(manifest.statuses[code], code).toBe(evaluate.responses[code]!.description);
    expect(Object.keys(manifest.statuses).sort()).toEqual(['200', '401', '402', '403', '409']);
    for (const [id, e] of Object.entries(manifest.endpoints)) {
      const op = doc.paths[new URL(e.url).pathname]?.post;
      expect(op, id).toBeDefined();
      expect(e.auth === 'none', id).toBe(op!.security.length === 0);
    }
  });
});

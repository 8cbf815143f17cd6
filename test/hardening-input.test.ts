import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/crypto/canonical.ts';
import { MAX_JSON_DEPTH } from '../src/api/json-bounds.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf, receiptCount as receiptsInLog } from './support/ledger-reads.ts';

/** `{"kind":"pay","x":{"x":…}}` nested `depth` objects deep, as raw text (JSON.stringify would overflow first). */
function deepAction(depth: number): string {
  return `{"kind":"pay","x":${'{"x":'.repeat(depth)}1${'}'.repeat(depth)}}`;
}

describe('JSON bounds at the body parser: depth and number range', () => {
  let s: TestServer;
  let key: string;
  beforeAll(async () => {
    s = await startTestServer();
    key = (await s.newKey('probe')).secret;
  });
  afterAll(() => s.stop());

  const meterCount = async () => (await chargesOf(s.ctx.ledger.read)).length;
  const receiptCount = () => receiptsInLog(s.ctx.ledger.read);

  const keyless: Array<[string, (action: string) => string]> = [
    ['/demo/hop', (a) => `{"action":${a}}`],
    ['/demo/act', (a) => `{"action":${a}}`],
    ['/demo/pas/pas-a/pre-bind', (a) => `{"job_id":"job_1","write":${a}}`],
  ];
  const keyed: Array<[string, (action: string) => string]> = [
    ['/v1/fuse/hop', (a) => `{"fuse_id":"fuse_drill_live","action":${a}}`],
    ['/v1/act', (a) => `{"fuse_id":"fuse_drill_live","action":${a}}`],
    ['/v1/classify', (a) => `{"action":${a}}`],
    ['/v1/execute-gate/demo', (a) => `{"action":${a}}`],
    ['/api/v1/execute-gate', (a) => `{"action":${a}}`],
  ];

  it.each([...keyless.map((k) => [...k, false] as const), ...keyed.map((k) => [...k, true] as const)])(
    '%s: 5,000-deep JSON and a 1e400 literal are 400 problems that change nothing',
    async (path, body, withKey) => {
      const before = [await meterCount(), await receiptCount()];
      const send = (text: string) =>
        s.fetch(path, { method: 'POST', body: text, headers: { 'content-type': 'application/json' }, ...(withKey ? { key } : {}) });
      const deep = await send(body(deepAction(5000)));
      expect(deep.status).toBe(400);
      expect(deep.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect((await deep.json()).code).toBe('json_too_deep');
      const huge = await send(body('{"kind":"pay","amount":1e400}'));
      expect(huge.status).toBe(400);
      const p = await huge.json();
      expect(p.code).toBe('number_out_of_range');
      expect(p.errors[0].field).toMatch(/amount$/);
      expect([await meterCount(), await receiptCount()]).toEqual(before);
    },
  );

  it('depth within the bound still reaches validation', async () => {
    const r = await s.fetch('/demo/hop', {
      method: 'POST',
      body: `{"action":${deepAction(MAX_JSON_DEPTH - 3)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).not.toBe(500);
    expect((await r.json()).code).not.toBe('json_too_deep');
  });

  it('MCP answers a deep tool argument with a problem, never a stack overflow text', async () => {
    const client = new Client({ name: 'probe', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`)));
    let deep: Record<string, unknown> = { x: 1 };
    for (let i = 0; i < 3000; i++) deep = { x: deep };
    let text = '';
    try {
      const r = (await client.callTool({ name: 'demo_hop', arguments: { action: { kind: 'pay', deep } } })) as {
        content: Array<{ text: string }>;
      };
      text = JSON.stringify(r);
    } catch (e) {
      text = String(e);
    }
    expect(text).not.toMatch(/Maximum call stack/);
    expect(text).toMatch(/json_too_deep|nested deeper/);
    await client.close();
  });

  it('canonical JSON encodes any depth without recursion', () => {
    let v: unknown = 1;
    for (let i = 0; i < 200_000; i++) v = [v];
    const text = canonicalJson(v);
    expect(text.length).toBe(400_001);
    expect(canonicalJson({ b: [1, { d: undefined, c: 'x' }], a: null })).toBe('{"a":null,"b":[1,{"c":"x"}]}');
  });

  it('gives the same bytes whether a value is shallow enough to encode by recursion or deep enough to need the stack', () => {
    const nest = (n: number): unknown => (n === 0 ? null : { z: [nest(n - 1), 'é\u2028"'], a: 1, m: undefined });
    const expected = (n: number): string => (n === 0 ? 'null' : `{"a":1,"z":[${expected(n - 1)},${JSON.stringify('é\u2028"')}]}`);
    for (const n of [1, 10, 60, 100, 500]) expect(canonicalJson(nest(n))).toBe(expected(n));
  });

  it('orders keys by UTF-16 code units whatever order they were built in, and escapes them, however many keys it has seen', () => {
    // RFC 8785's rules written out separately. (A sorted object would not do: JavaScript lists integer-like keys first, '9' before '10'.)
    const reference = (v: unknown): string =>
      Array.isArray(v)
        ? `[${v.map(reference).join(',')}]`
        : v !== null && typeof v === 'object'
          ? `{${Object.keys(v)
              .sort()
              .map((k) => `${JSON.stringify(k)}:${reference((v as Record<string, unknown>)[k])}`)
              .join(',')}}`
          : JSON.stringify(v);
    const keys = ['b', 'a', 'é', 'z\u2028', '"q"', 'A', '\u{1F600}', '\uFB01', 'a'.repeat(65), '10', '9'];
    const built = Object.fromEntries(keys.map((k, i) => [k, { [k]: i, n: [true, null, -0.5, 'x'] }]));
    const reversed = Object.fromEntries([...keys].reverse().map((k, i) => [k, { n: [true, null, -0.5, 'x'], [k]: keys.length - 1 - i }]));
    const expected = reference(built);
    expect(canonicalJson(built)).toBe(expected);
    expect(canonicalJson(reversed)).toBe(expected);
    // Code units, not code points: a non-BMP key sorts by its surrogate (0xD83D), before U+FB01; '10' before '9'.
    expect(expected.indexOf('\u{1F600}')).toBeLessThan(expected.indexOf('\uFB01'));
    expect(expected.indexOf('"10"')).toBeLessThan(expected.indexOf('"9"'));
    // Past the bound of remembered keys, new keys are encoded as before.
    for (let i = 0; i < 3000; i++) canonicalJson({ [`k${i}`]: i });
    expect(canonicalJson({ 'late"key': 1, 'late\nkey': 2 })).toBe('{"late\\nkey":2,"late\\"key":1}');
    expect(canonicalJson(reversed)).toBe(expected);
  });
});

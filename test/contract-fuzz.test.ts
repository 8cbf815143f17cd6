/**
 * The contract test: a schema-driven fuzzer built from /openapi.json. Seeded
 * and bounded, it sends a few thousand requests across every operation, with
 * and without a key, and fails on any 5xx, on any answer the document does not
 * describe (status, content type, body schema), and on any write or charge
 * made by a rejected request (a problem+json answer).
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf, receiptCount } from './support/ledger-reads.ts';

type Schema = Record<string, unknown>;
interface Operation {
  operationId: string;
  security: unknown[];
  parameters?: Array<{ name?: string; in?: string; required?: boolean; schema?: Schema; $ref?: string }>;
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> };
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: Schema }> }>;
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components: { responses: Record<string, { content: Record<string, { schema: Schema }> }>; schemas: Record<string, Schema> };
}

/** mulberry32: a small seeded PRNG, so a failure is reproducible. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fuse ids the generator picks from: the drills, and the fuzzer key's own (added once created). */
const FUSES = ['fuse_drill_live', 'fuse_drill_dead'];

const NASTY: unknown[] = [
  '',
  ' ',
  'x'.repeat(300),
  '../../etc/passwd',
  '\u0000',
  'ünï',
  -1,
  0,
  1.5,
  2 ** 60,
  true,
  null,
  [],
  {},
  '1e400',
  '9'.repeat(30),
];

/** A value for a JSON Schema: mostly plausible, sometimes hostile. */
/** A documented example with every URL's host made one that never resolves: the examples name documentation hosts (example.com), which a server may call. */
const neverCalled = (example: unknown): unknown =>
  JSON.parse(JSON.stringify(example).replace(/(https?:\/\/)[^/"]+/g, '$1fuzz.fusegate.invalid'));

function generate(schema: Schema | undefined, rnd: () => number, depth = 0): unknown {
  if (!schema || depth > 6) return 'x';
  if (rnd() < 0.08) return NASTY[Math.floor(rnd() * NASTY.length)];
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[Math.floor(rnd() * schema.enum.length)];
  for (const k of ['anyOf', 'oneOf'] as const) {
    const alts = schema[k] as Schema[] | undefined;
    if (alts?.length) return generate(alts[Math.floor(rnd() * alts.length)], rnd, depth + 1);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length) return generate(schema.allOf[0] as Schema, rnd, depth + 1);
  if (schema.default !== undefined && rnd() < 0.3) return schema.default;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(props)) if (required.has(k) || rnd() < 0.5) out[k] = generate(v, rnd, depth + 1);
      if (rnd() < 0.05) out.unexpected_field = 1;
      return out;
    }
    case 'array': {
      const n = Math.min(Number(schema.minItems ?? 0) + Math.floor(rnd() * 3), Number(schema.maxItems ?? 3));
      return Array.from({ length: Math.max(0, n) }, () => generate(schema.items as Schema, rnd, depth + 1));
    }
    case 'integer':
    case 'number': {
      const lo = Number(schema.minimum ?? schema.exclusiveMinimum ?? 0);
      const hi = Number(schema.maximum ?? schema.exclusiveMaximum ?? lo + 100);
      const v = lo + Math.floor(rnd() * Math.max(1, Math.min(hi - lo, 1000)));
      return type === 'integer' ? v : v + (rnd() < 0.5 ? 0.5 : 0);
    }
    case 'boolean':
      return rnd() < 0.5;
    case 'null':
      return null;
    case 'string': {
      // A URL a server may call (a webhook subscriber): one that never resolves, RFC 6761.
      if (schema.format === 'uri') return 'https://fuzz.fusegate.invalid/x';
      if (schema.format === 'date-time') return new Date(Date.UTC(2026, 10, 22)).toISOString();
      const pattern = String(schema.pattern ?? '');
      if (/\\d\{1,9\}\(\\\.\\d\{1,6\}\)\?|decimal/i.test(pattern)) return `${Math.floor(rnd() * 1000)}.00`;
      if (pattern.startsWith('^fuse_')) return FUSES[Math.floor(rnd() * FUSES.length)];
      if (pattern.includes('[0-9a-f]{64}')) return 'a'.repeat(64);
      if (pattern.includes('[A-Z]{2}')) return 'CA';
      return 'abc';
    }
    default:
      return {};
  }
}

/** What a rejected request must not change: the receipts log and the charges its receipts state. */
const written = async (s: TestServer) => [(await chargesOf(s.ctx.ledger.read)).length, await receiptCount(s.ctx.ledger.read)];

/** A generated path parameter as one segment that addresses its own operation: encoded (a `/` or `%2e` in it stays inside it), never empty, `.` or `..`. */
const pathSegment = (v: string): string => (v === '' || v === '.' || v === '..' ? 'x' : encodeURIComponent(v));

describe('contract: every answer to any input matches /openapi.json', () => {
  let s: TestServer;
  let doc: Doc;
  let key: string;
  beforeAll(async () => {
    s = await startTestServer({ DEMO_RATE_LIMIT: '100000', CLEARING_INTERVAL_HOURS: '0', WEBHOOK_POLL_MS: '600000' });
    key = (await s.newKey('fuzzer', 1_000_000)).secret;
    doc = (await (await s.fetch('/openapi.json')).json()) as Doc;
    const own = await (await s.fetch('/v1/fuses', { key, json: { label: 'fuzzed' } })).json();
    FUSES.push(own.fuse_id, own.fuse_id);
  });
  afterAll(() => s.stop());

  it('fuzzes every operation (seeded, bounded) without a 5xx, an undescribed answer, or a write by a rejected request', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
    const validators = new Map<Schema, ReturnType<typeof ajv.compile>>();
    const validate = (schema: Schema, body: unknown) => {
      let v = validators.get(schema);
      if (!v) {
        const text = JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/');
        v = ajv.compile(JSON.parse(text) as Schema);
        validators.set(schema, v);
      }
      return v(body) ? undefined : ajv.errorsText(v.errors);
    };
    const rnd = prng(Number(process.env.FUZZ_SEED ?? 20261123));
    const operations = Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    // A few thousand requests in all, however many operations there are.
    const perOperation = Number(process.env.FUZZ_PER_OPERATION ?? Math.ceil(2400 / operations));
    const failures: string[] = [];
    let sent = 0;

    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (path === '/mcp') continue; // JSON-RPC: covered by the MCP tests with the official SDK client
        for (let i = 0; i < perOperation; i++) {
          const withKey = op.security.length > 0 ? rnd() < 0.8 : rnd() < 0.2;
          const url = new URL(
            // An empty segment would address another operation (`/v1/pas/licenses/` is the list), and so would a dot
            // segment, which the URL removes (`/v1/keys/.` and `/v1/keys/a/..` are `/v1/keys/`): never generated.
            path.replace(/\{([^}]+)\}/g, (_, name: string) =>
              rnd() < 0.5 ? `${name === 'id' ? 'rcpt' : name}_x` : pathSegment(String(generate({ type: 'string' }, rnd))),
            ),
            s.url,
          );
          for (const p of op.parameters ?? []) {
            if (p.in === 'query' && (p.required || rnd() < 0.5)) {
              const v = generate(p.schema, rnd);
              url.searchParams.set(p.name!, typeof v === 'string' ? v : JSON.stringify(v));
            }
          }
          const headers: Record<string, string> = {};
          if (withKey) headers.authorization = `Bearer ${key}`;
          let body: string | undefined;
          const media = op.requestBody?.content['application/json'];
          if (media && method !== 'get') {
            headers['content-type'] = 'application/json';
            const roll = rnd();
            const value = roll < 0.3 && media.example !== undefined ? neverCalled(media.example) : generate(media.schema, rnd);
            body =
              roll > 0.97
                ? '{"a":' + '['.repeat(100) + ']'.repeat(100) + '}'
                : roll > 0.94
                  ? '{"x":1e400}'
                  : roll > 0.92
                    ? '{not json'
                    : JSON.stringify(value);
          }
          const before = await written(s);
          const res = await fetch(url, {
            method: method.toUpperCase(),
            headers,
            redirect: 'manual',
            ...(body !== undefined ? { body } : {}),
          });
          sent++;
          const text = await res.text();
          const where = `${method.toUpperCase()} ${url.pathname}${url.search} ${withKey ? '(key)' : '(no key)'} -> ${res.status}`;
          // An optional dependency this test does not configure (the inference upstream) is a documented 503.
          const notConfigured = res.status === 503 && /"code":"[a-z_]+_not_configured"/.test(text);
          if (res.status >= 500 && !notConfigured) {
            failures.push(`${where}: 5xx ${text.slice(0, 200)}`);
            continue;
          }
          const documented = op.responses[String(res.status)] ?? op.responses.default;
          if (!documented) {
            failures.push(`${where}: status not documented (${Object.keys(op.responses).join(', ')})`);
            continue;
          }
          const resolved = documented.$ref ? doc.components.responses[documented.$ref.split('/').pop()!]! : documented;
          const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
          if (resolved.content) {
            const media = resolved.content[type];
            if (!media) {
              failures.push(`${where}: content type ${type || '(none)'} not documented (${Object.keys(resolved.content).join(', ')})`);
              continue;
            }
            if (type.endsWith('json')) {
              let parsed: unknown;
              try {
                parsed = JSON.parse(text);
              } catch {
                failures.push(`${where}: not JSON`);
                continue;
              }
              const error = validate(media.schema, parsed);
              if (error) failures.push(`${where}: body does not match: ${error}`);
            }
          }
          // RR-1's 428 challenge is itself a metered answer (the challenge toll).
          const pricedChallenge = res.status === 428 && path.startsWith('/api/v1/require-receipt/');
          if (type === 'application/problem+json' && !pricedChallenge) {
            const after = await written(s);
            if (after[0] !== before[0] || after[1] !== before[1])
              failures.push(`${where}: a rejected request wrote (meter ${before[0]}->${after[0]}, receipts ${before[1]}->${after[1]})`);
          }
        }
      }
    }
    if (process.env.FUZZ_REPORT) (await import('node:fs')).writeFileSync(process.env.FUZZ_REPORT, [`sent ${sent}`, ...failures].join('\n'));
    expect(sent).toBeGreaterThan(2000);
    const unique = [...new Set(failures.map((f) => f.replace(/\?.*? \(/, ' (')))];
    expect(unique.slice(0, 80), `${failures.length} failures`).toEqual([]);
  }, 240_000);

  it('keyed examples never name a drill fuse (a key gets 404 for those; they answer the public demos only)', () => {
    const keyed = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => op.security.length > 0 && op.requestBody)
        .map(([method, op]) => ({
          where: `${method.toUpperCase()} ${path}`,
          example: JSON.stringify(op.requestBody!.content['application/json']?.example ?? null),
        })),
    );
    expect(keyed.length).toBeGreaterThan(20);
    expect(keyed.filter((k) => /drill/.test(k.example)).map((k) => k.where)).toEqual([]);
  });

  it('documents the decision bodies and creates it answers (not every success as 200)', () => {
    const statuses = (path: string, method = 'post') => Object.keys(doc.paths[path]![method]!.responses);
    expect(statuses('/v1/fuses')).toContain('201');
    expect(statuses('/v1/fuses')).not.toContain('200');
    expect(statuses('/v1/prefinality/evaluate')).toEqual(expect.arrayContaining(['200', '403', '409']));
    expect(Object.keys(doc.paths['/v1/prefinality/evaluate']!.post!.responses['403']!.content!)).toContain('application/json');
    expect(statuses('/v1/pas/pas-a/pre-bind')).toEqual(expect.arrayContaining(['200', '403', '409']));
    expect(Object.keys(doc.paths['/v1/pas/bind-ticket/redeem']!.post!.responses['409']!.content!)).toContain('application/json');
    expect(Object.keys(doc.paths['/api/v1/logs/{log}/checkpoint']!.get!.responses['200']!.content!)).toEqual(['text/plain']);
  });
});

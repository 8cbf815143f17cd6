/**
 * One list of act kinds and one rule for their case, wherever a caller reads
 * them: /start, the dashboard guide, the OpenAPI description, the MCP hop
 * tool, and every route that takes a kind (the gate's and the site's).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ACT_KINDS } from '../src/catalog/surfaces.ts';
import { formClient } from './support/form-client.ts';
import { runCli } from './support/cli.ts';
import { startTestServer, testEnv, type TestServer } from './support/server.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s?.stop());

/** The text of an element, tags dropped and spaces folded. */
const textOf = (html: string, id: string) => {
  const at = html.indexOf(`id="${id}"`);
  expect(at, `#${id}`).toBeGreaterThan(-1);
  return html
    .slice(at, html.indexOf('</p>', at))
    .replace(/<[^>]+>/g, '')
    .replace(/&quot;|&#34;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');
};
const listsEveryKind = (text: string) => {
  for (const kind of DEFAULT_ACT_KINDS) expect(text, kind).toMatch(new RegExp(`\\b${kind}\\b`));
  expect(text).toContain('read in lower case ("Write" is "write")');
};

describe('act kinds, everywhere a caller reads them', () => {
  it('/start and the dashboard guide list every kind and the case rule', async () => {
    listsEveryKind(textOf(await (await s.fetch('/start')).text(), 'act-kinds'));
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'kinds-guide@example.invalid', password: 'a long enough password' })).status).toBe(303);
    listsEveryKind(textOf(await (await c.get('/dashboard')).text(), 'act-kinds'));
  });

  it('the OpenAPI description of the hop and its action.kind list them', async () => {
    const doc = await (await s.fetch('/openapi.json')).json();
    const hop = doc.paths['/v1/fuse/hop'].post;
    listsEveryKind(hop.description);
    const action = hop.requestBody.content['application/json'].schema.properties.action;
    expect(action.description).toContain('act kind');
    listsEveryKind(action.properties.kind.description);
  });

  it('the MCP hop and act tools say them in their description', async () => {
    const key = await s.newKey('kinds mcp');
    const client = new Client({ name: 'fusegate-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key.secret}` } } }),
    );
    const { tools } = await client.listTools();
    for (const name of ['fuse_hop', 'act']) listsEveryKind(tools.find((t) => t.name === name)!.description!);
    await client.close();
  });

  it('a site route that takes a kind reads it in lower case too, as the hop does', async () => {
    const key = await s.newKey('kinds site');
    const published = await s.fetch('/api/v1/astl/publish', {
      key: key.secret,
      json: { entity: 'agent:kinds-case', act_kinds: ['Pay', 'REFUND'] },
    });
    expect(published.status, await published.clone().text()).toBe(201);
    expect((await published.json()).manifest.act_kinds).toEqual(['pay', 'refund']);
  });

  it('keys surface --acts on the command line reads kinds by the same rule', async () => {
    const agent = await s.newKey('kinds cli', undefined, 'agent');
    const cli = await runCli(['keys', 'surface', agent.id, '--acts', 'Pay, REFUND,pay'], testEnv(s.dir));
    expect(cli.code, cli.stderr).toBe(0);
    const ops = await s.newKey('kinds cli operator', undefined, 'operator', agent.accountId);
    expect((await (await s.fetch(`/v1/keys/${agent.id}`, { key: ops.secret })).json()).surface).toEqual({
      kinds: ['pay', 'refund'],
      declared: true,
    });
    expect((await runCli(['keys', 'surface', agent.id, '--acts', 'pay!'], testEnv(s.dir))).code).not.toBe(0);
  });
});

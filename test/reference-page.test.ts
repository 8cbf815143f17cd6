/**
 * The API reference as people read it (issue 49 item 6): descriptions rendered
 * (no literal backticks), enum values and nested body fields shown, and the
 * everyday operations' answers recorded from a running service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ACT_KINDS } from '../src/catalog/surfaces.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
/** The reference's index, and each area's page by tag. */
let index = '';
const area: Record<string, string> = {};
beforeAll(async () => {
  s = await startTestServer();
  index = await (await s.fetch('/reference')).text();
  for (const tag of ['gate', 'keys']) area[tag] = await (await s.fetch(`/reference/${tag}`)).text();
});
afterAll(() => s?.stop());

/** The HTML of one operation's article on its area's page. */
const article = (id: string, tag = id.includes('keys') ? 'keys' : 'gate') => {
  const html = area[tag]!;
  const at = html.indexOf(`<article aria-labelledby="${id}"`);
  expect(at, id).toBeGreaterThan(-1);
  return html.slice(at, html.indexOf('</article>', at));
};
const decode = (t: string) =>
  t
    .replace(/&quot;|&#34;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

describe('the API reference page', () => {
  it('renders the descriptions: code is code, never a literal backtick outside a code block', () => {
    const prose = (index + area.gate! + area.keys!)
      .replace(/<script[\s\S]*?<\/script>/g, '')
      .replace(/<pre[\s\S]*?<\/pre>/g, '')
      .replace(/<code[\s\S]*?<\/code>/g, '');
    expect(prose).not.toContain('`');
    expect(article('post-v1-fuse-hop')).toContain('<code>surface</code>');
  });

  it("describes every field of the hop's body, action.kind with the kinds", () => {
    const hop = decode(
      article('post-v1-fuse-hop')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' '),
    );
    expect(hop).toMatch(/fuse_id string yes the fuse this agent's acts are checked against/);
    expect(hop).toMatch(/action object no the action about to happen/);
    expect(hop).toMatch(/action\.kind string yes The act kind is letters, digits and _, read in lower case/);
    for (const kind of DEFAULT_ACT_KINDS) expect(hop).toContain(kind);
  });

  it('shows the values an enum accepts', () => {
    const create = decode(
      article('post-v1-keys')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' '),
    );
    expect(create).toContain('role one of "agent" | "operator"');
  });

  it("shows the hop's answer as recorded from a running service", () => {
    const hop = decode(article('post-v1-fuse-hop'));
    expect(hop).toContain('Example answer: HTTP 200, recorded from a running service');
    expect(hop).toContain('"decision": "PERMIT"');
    expect(hop).toContain('"verify_url": "' + s.ctx.config.BASE_URL + '/v1/receipts/rcpt_');
  });

  it('lists every operation on its index, each linked to its area page, where its article is', async () => {
    const openapi = (await (await s.fetch('/openapi.json')).json()) as { paths: Record<string, Record<string, { tags: string[] }>> };
    const count = Object.values(openapi.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
    const links = [...index.matchAll(/<li data-search="[^"]*"><a href="(\/reference\/[a-z_]+)#([a-z0-9-]+)"/g)];
    expect(links).toHaveLength(count);
    expect(links.map((m) => `${m[1]}#${m[2]}`)).toContain('/reference/gate#post-v1-fuse-hop');
    const page = await s.fetch('/reference/keys');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<article aria-labelledby="post-v1-keys"');
  });

  it('writes prices as the pricing page does: two decimals, then USD', () => {
    expect(decode(article('post-v1-fuse-hop').replace(/<[^>]+>/g, '')).replace(/\s+/g, ' ')).toContain(
      'Charges: execute_gate 0.10 USD, hold 0.50 USD.',
    );
  });
});

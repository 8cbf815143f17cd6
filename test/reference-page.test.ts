/**
 * The API reference as people read it (issue 49 item 6): descriptions rendered
 * (no literal backticks), enum values and nested body fields shown, and the
 * everyday operations' answers recorded from a running service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ACT_KINDS } from '../src/catalog/surfaces.ts';
import { startTestServer, type TestServer } from './support/server.ts';

let s: TestServer;
let html = '';
beforeAll(async () => {
  s = await startTestServer();
  html = await (await s.fetch('/reference')).text();
});
afterAll(() => s?.stop());

/** The HTML of one operation's article. */
const article = (id: string) => {
  const at = html.indexOf(`<article aria-labelledby="${id}"`);
  expect(at, id).toBeGreaterThan(-1);
  return html.slice(at, html.indexOf('</article>', at));
};
const decode = (t: string) => t.replace(/&quot;|&#34;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

describe('the API reference page', () => {
  it('renders the descriptions: code is code, never a literal backtick outside a code block', () => {
    const prose = html.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<pre[\s\S]*?<\/pre>/g, '').replace(/<code[\s\S]*?<\/code>/g, '');
    expect(prose).not.toContain('`');
    expect(article('post-v1-fuse-hop')).toContain('<code>surface</code>');
  });

  it("describes every field of the hop's body, action.kind with the kinds", () => {
    const hop = decode(article('post-v1-fuse-hop').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));
    expect(hop).toMatch(/fuse_id string yes the fuse this agent's acts are checked against/);
    expect(hop).toMatch(/action object no the action about to happen/);
    expect(hop).toMatch(/action\.kind string yes The act kind is letters, digits and _, read in lower case/);
    for (const kind of DEFAULT_ACT_KINDS) expect(hop).toContain(kind);
  });

  it('shows the values an enum accepts', () => {
    const create = decode(article('post-v1-keys').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' '));
    expect(create).toContain('role one of "agent" | "operator"');
  });

  it("shows the hop's answer as recorded from a running service", () => {
    const hop = decode(article('post-v1-fuse-hop'));
    expect(hop).toContain('Example answer: HTTP 200, recorded from a running service');
    expect(hop).toContain('"decision": "PERMIT"');
    expect(hop).toContain('"verify_url": "' + s.ctx.config.BASE_URL + '/v1/receipts/rcpt_');
  });
});

/**
 * The dashboard's receipts page filters by the agent's tool a hop or an
 * evaluate gated (the MCP proxy and the tool guards name it), without a browser.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginByEmail } from '../src/ledger/accounts.ts';
import { formClient } from './support/form-client.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('dashboard receipts by tool', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('lists the receipts of one tool, in any case, with a Tool column and the tool in the exports; a name that is no tool name is a 400', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'tools@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'tools@example.invalid'))!.account_id;
    const agent = await s.newKey('agent', undefined, 'agent', accountId);
    const ops = await s.newKey('ops', undefined, 'operator', accountId);
    const fuse = (await (await s.fetch('/v1/fuses', { key: ops.secret, json: { state: 'LIVE' } })).json()).fuse_id as string;
    const hop = (json: Record<string, unknown>) => s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse, ...json } });
    for (const tool of ['send_email', 'send_email', 'get-weather']) expect((await hop({ tool })).status).toBe(200);
    expect((await hop({})).status).toBe(200);
    const evaluated = await s.fetch('/v1/prefinality/evaluate', { key: agent.secret, json: { rail: 'x402', transfer: { amount: '5.00', currency: 'USDC', counterparty: '0xabc' }, context: { fuse_id: fuse, tool: 'send_email' } } });
    expect(evaluated.status).toBe(200);

    const page = await (await c.get('/dashboard/receipts?tool=SEND_EMAIL')).text();
    const tools = [...page.matchAll(/<td data-label="Tool">(.*?)<\/td>/g)].map((m) => m[1]);
    expect(tools).toEqual(['<code>send_email</code>', '<code>send_email</code>', '<code>send_email</code>']);
    expect([...page.matchAll(/<td data-label="Kind">(.*?)<\/td>/g)].map((m) => m[1])).toEqual(['prefinality', 'hop', 'hop']);
    expect(page).toContain('id="f-tool" name="tool" type="text" value="SEND_EMAIL"');
    // Unfiltered, a receipt that names no tool has an empty cell.
    const all = await (await c.get('/dashboard/receipts?kind=hop')).text();
    expect([...all.matchAll(/<td data-label="Tool">(.*?)<\/td>/g)].map((m) => m[1])).toEqual(['', '<code>get-weather</code>', '<code>send_email</code>', '<code>send_email</code>']);

    const csv = (await (await c.get('/dashboard/receipts.csv?tool=get-weather')).text()).trim().split('\r\n');
    expect(csv[0]).toBe('id,created_at,kind,decision,subject,tool,key_id,verify_url');
    expect(csv).toHaveLength(2);
    expect(csv[1]).toContain(`,hop,PERMIT,${fuse},get-weather,${agent.id},`);
    const json = await (await c.get('/dashboard/receipts.json?tool=send_email&kind=hop')).json();
    expect(json.data.map((r: { tool: string }) => r.tool)).toEqual(['send_email', 'send_email']);

    const bad = await c.get('/dashboard/receipts?tool=send%20email');
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('tool: an MCP tool name');
  });

  it("shows a key's act kinds on its page and declares them from the form", async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'kinds@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'kinds@example.invalid'))!.account_id;
    const agent = await s.newKey('kinds agent', undefined, 'agent', accountId);
    const before = await (await c.get(`/dashboard/keys/${agent.id}`)).text();
    expect(before).toContain('<h2>Act kinds</h2>');
    expect(before).toContain('<code>bind_policy</code>');
    const saved = await c.post(`/dashboard/keys/${agent.id}/surface`, { kinds: 'pay, Refund' });
    expect([saved.status, saved.headers.get('location')]).toEqual([303, `/dashboard/keys/${agent.id}?done=surface`]);
    const after = await (await c.get(`/dashboard/keys/${agent.id}?done=surface`)).text();
    expect(after).toContain('Saved the act kinds.');
    expect(after).toContain('<p class="kinds"><code>pay</code> <code>refund</code></p>');
    expect((await c.post(`/dashboard/keys/${agent.id}/surface`, { kinds: ' ' })).status).toBe(400);
    expect((await c.post(`/dashboard/keys/${agent.id}/surface`, { default: '1' })).status).toBe(303);
    expect(await (await c.get(`/dashboard/keys/${agent.id}`)).text()).toContain('<code>bind_policy</code>');
  });
});

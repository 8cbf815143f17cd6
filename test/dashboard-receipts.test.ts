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
    const evaluated = await s.fetch('/v1/prefinality/evaluate', {
      key: agent.secret,
      json: {
        rail: 'x402',
        transfer: { amount: '5.00', currency: 'USDC', counterparty: '0xabc' },
        context: { fuse_id: fuse, tool: 'send_email' },
      },
    });
    expect(evaluated.status).toBe(200);

    const page = await (await c.get('/dashboard/receipts?tool=SEND_EMAIL')).text();
    const tools = [...page.matchAll(/<td data-label="Tool">(.*?)<\/td>/g)].map((m) => m[1]);
    expect(tools).toEqual(['<code>send_email</code>', '<code>send_email</code>', '<code>send_email</code>']);
    expect([...page.matchAll(/<td data-label="Kind">(.*?)<\/td>/g)].map((m) => m[1])).toEqual(['prefinality', 'hop', 'hop']);
    expect(page).toContain('id="f-tool" name="tool" type="text" value="SEND_EMAIL"');
    // Unfiltered, a receipt that names no tool has an empty cell.
    const all = await (await c.get('/dashboard/receipts?kind=hop')).text();
    expect([...all.matchAll(/<td data-label="Tool">(.*?)<\/td>/g)].map((m) => m[1])).toEqual([
      '',
      '<code>get-weather</code>',
      '<code>send_email</code>',
      '<code>send_email</code>',
    ]);

    const csv = (await (await c.get('/dashboard/receipts.csv?tool=get-weather')).text()).trim().split('\r\n');
    expect(csv[0]).toBe('id,created_at,kind,decision,reason,amount_usd,subject,fuse_label,tool,key_id,key_name,verify_url');
    expect(csv).toHaveLength(2);
    expect(csv[1]).toMatch(new RegExp(`,hop,PERMIT,the fuse is LIVE,\\d+\\.\\d\\d,${fuse},,get-weather,${agent.id},agent,`));
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

  it('says why and how much, with key names and fuse labels, filters refusals by choice, pages both ways and counts', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'why@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'why@example.invalid'))!.account_id;
    const agent = await s.newKey('payments bot', undefined, 'agent', accountId);
    const ops = await s.newKey('ops', undefined, 'operator', accountId);
    const fuse = async (label: string) =>
      (await (await s.fetch('/v1/fuses', { key: ops.secret, json: { state: 'LIVE', label } })).json()).fuse_id as string;
    const [live, dead] = [await fuse('prod writes'), await fuse('sandbox')];
    expect((await s.fetch(`/v1/fuses/${dead}/dead`, { key: ops.secret, method: 'POST' })).status).toBe(200);
    const hop = async (fuseId: string) =>
      (await (await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuseId } })).json()) as {
        decision: string;
        charge: { amount_usd: string };
      };
    const permit = await hop(live);
    const deny = await hop(dead);
    expect([permit.decision, deny.decision]).toEqual(['PERMIT', 'DENY']);
    expect(Number(deny.charge.amount_usd)).toBeGreaterThan(0);

    const page = await (await c.get('/dashboard/receipts?kind=hop')).text();
    const cells = (label: string, html = page) =>
      [...html.matchAll(new RegExp(`<td data-label="${label}">(.*?)</td>`, 'g'))].map((m) => m[1]);
    expect(cells('Reason')).toEqual(['the fuse is DEAD: it fails closed', 'the fuse is LIVE']);
    expect(cells('Charged')).toEqual([deny.charge.amount_usd, permit.charge.amount_usd]);
    expect(cells('Subject')).toEqual([`sandbox <code>${dead}</code>`, `prod writes <code>${live}</code>`]);
    expect(cells('Key')).toEqual([`payments bot <code>${agent.id}</code>`, `payments bot <code>${agent.id}</code>`]);
    expect(page).toContain('2 receipts match.');
    // Filters are choices: the kind, decision (with "refusals") and the account's keys by name.
    expect(page).toMatch(/<select id="f-kind" name="kind"><option value="">Any kind<\/option>.*<option value="hop" selected>hop<\/option>/);
    expect(page).toContain('<option value="refusals">Refusals</option>');
    expect(page).toContain(`<option value="${agent.id}">payments bot (${agent.id})</option>`);

    const refusals = await (await c.get('/dashboard/receipts?decision=refusals')).text();
    expect(cells('Decision', refusals)).toEqual(['<strong>DENY</strong>']);
    expect(refusals).toContain('<option value="refusals" selected>');
    expect(refusals).toContain('1 receipt matches.');
    const json = await (await c.get('/dashboard/receipts.json?decision=refusals')).json();
    expect(json.data).toHaveLength(1);
    expect(json.data[0]).toMatchObject({
      decision: 'DENY',
      reason: 'the fuse is DEAD: it fails closed',
      amount_usd: deny.charge.amount_usd,
      key_name: 'payments bot',
      fuse_label: 'sandbox',
      subject: dead,
    });
    const csv = (await (await c.get(`/dashboard/receipts.csv?decision=refusals&key=${agent.id}`)).text()).trim().split('\r\n');
    expect(csv).toHaveLength(2);
    expect(csv[1]).toContain(
      `,hop,DENY,the fuse is DEAD: it fails closed,${deny.charge.amount_usd},${dead},sandbox,,${agent.id},payments bot,`,
    );
  });

  it('pages newer and older through more than one page, with the total', async () => {
    const c = formClient(s);
    expect((await c.post('/signup', { email: 'pages@example.invalid', password: 'a long enough password' })).status).toBe(303);
    const accountId = (await loginByEmail(s.ctx.ledger.read, 'pages@example.invalid'))!.account_id;
    const agent = await s.newKey('pager', undefined, 'agent', accountId);
    const ops = await s.newKey('ops', undefined, 'operator', accountId);
    const fuse = (await (await s.fetch('/v1/fuses', { key: ops.secret, json: { state: 'LIVE' } })).json()).fuse_id as string;
    for (let i = 0; i < 120; i++) expect((await s.fetch('/v1/fuse/hop', { key: agent.secret, json: { fuse_id: fuse } })).status).toBe(200);
    const ids = (html: string) => [...html.matchAll(/<a href="\/verify\?id=([^"]+)">/g)].map((m) => m[1]!);
    const link = (html: string, rel: string) =>
      (new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(html)?.[1] ?? '').replace(/&#38;/g, '&');
    const first = await (await c.get('/dashboard/receipts?kind=hop')).text();
    expect(first).toContain('120 receipts match.');
    expect(link(first, 'prev')).toBe('');
    const second = await (await c.get(link(first, 'next'))).text();
    const third = await (await c.get(link(second, 'next'))).text();
    expect([ids(first).length, ids(second).length, ids(third).length]).toEqual([50, 50, 20]);
    expect(new Set([...ids(first), ...ids(second), ...ids(third)]).size).toBe(120);
    expect(link(third, 'next')).toBe('');
    // Back up: newer from the last page is the second page, and newer from that is the first.
    const back = await (await c.get(link(third, 'prev'))).text();
    expect(ids(back)).toEqual(ids(second));
    const top = await (await c.get(link(back, 'prev'))).text();
    expect(ids(top)).toEqual(ids(first));
    expect(link(top, 'prev')).toBe('');
    expect(top).toContain('120 receipts match.');
  });
});

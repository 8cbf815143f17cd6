import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

const TARGETS = ['relay', 'demo', 'verify', 'bind-room', 'scan', 'clocks', 'hiring', 'mortgage', 'chatbot'];

describe('Relay: enroll, track links, status, network', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });

  beforeAll(async () => {
    s = await startTestServer({ SITE_URL: 'https://site.example' });
    key = await s.newKey('partner');
  });
  afterAll(() => s.stop());

  it('enroll returns the nine track links and the status page, sealed, charged nothing', async () => {
    const r = await post('/api/v1/relay/enroll', { partner_id: 'acme-brokers', name: 'Acme Brokers' });
    expect(r.status).toBe(201);
    const b = await r.json();
    expect(Object.keys(b.track_links)).toEqual(TARGETS);
    expect(b.track_links['bind-room']).toBe('https://site.example/go/acme-brokers/bind-room');
    expect(b.status_url).toBe('https://site.example/go/acme-brokers/status');
    expect(b.wholesale_usd.sprint).toEqual({ usd: 4500, deposit_usd: 2250 });
    const e = await (await s.fetch(new URL(b.verify_url).pathname)).json();
    expect(e.verification).toEqual({ signature: true, inclusion: true });
    expect(await chargesOf(s.ctx.ledger.read, key.id)).toHaveLength(0);
    const again = await post('/api/v1/relay/enroll', { partner_id: 'acme-brokers', name: 'Someone else' });
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe('partner_taken');
  });

  it('each of the nine targets redirects to its page and counts the click; status and network report the counts', async () => {
    for (const t of TARGETS) {
      const r = await s.fetch(`/go/acme-brokers/${t}`, { redirect: 'manual' });
      expect(r.status, t).toBe(302);
      expect(r.headers.get('location')).toMatch(/^https:\/\/site\.example\/[a-z/-]+\?via=acme-brokers$/);
    }
    await s.fetch('/go/acme-brokers/demo', { redirect: 'manual' });
    expect((await s.fetch('/go/acme-brokers/scan', { redirect: 'manual' })).headers.get('location')).toBe(
      'https://site.example/scanner?via=acme-brokers',
    );
    const st = await (await s.fetch('/go/acme-brokers/status')).json();
    expect(st).toMatchObject({ partner_id: 'acme-brokers', status: 'active', clicks_total: 11 });
    expect(st.clicks.demo).toBe(2);
    expect(st.clicks.scan).toBe(2);
    expect(st.clicks.relay).toBe(1);
    const n = await (await s.fetch('/api/v1/relay/network')).json();
    expect(n).toMatchObject({ partners: 1, clicks_total: 11, top_partners: [{ partner_id: 'acme-brokers', clicks: 11 }] });
    expect(n.targets).toEqual(TARGETS);
  });

  it('unknown partner or target is 404 and counts nothing; bad enrollments are 400 naming the field', async () => {
    const before = (await (await s.fetch('/go/acme-brokers/status')).json()).clicks_total;
    const a = await s.fetch('/go/nobody/demo', { redirect: 'manual' });
    expect(a.status).toBe(404);
    expect((await a.json()).code).toBe('unknown_partner');
    const b = await s.fetch('/go/acme-brokers/casino', { redirect: 'manual' });
    expect(b.status).toBe(404);
    expect((await b.json()).code).toBe('unknown_target');
    expect((await (await s.fetch('/go/acme-brokers/status')).json()).clicks_total).toBe(before);
    for (const [body, field] of [
      [{ partner_id: 'Acme!', name: 'x' }, 'partner_id'],
      [{ partner_id: 'status', name: 'x' }, 'partner_id'],
      [{ partner_id: 'okay-id', name: '' }, 'name'],
    ] as const) {
      const r = await post('/api/v1/relay/enroll', body);
      expect(r.status, field).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await (await s.fetch('/api/v1/relay/network')).json()).partners).toBe(1);
    expect((await s.fetch('/api/v1/relay/enroll', { method: 'POST', json: { partner_id: 'abc', name: 'x' } })).status).toBe(401);
  });
});

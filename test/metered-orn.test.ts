import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { chargesOf } from './support/ledger-reads.ts';

async function meterRows(s: TestServer, keyId: string) {
  return (await chargesOf(s.ctx.ledger.read, keyId)).map((r) => ({ sku: r.sku, micros: r.amount_micros, nap: r.nap, ref: r.ref }));
}

describe('ORN: General Average declare, SHARP, scale', () => {
  let s: TestServer;
  let key: { id: string; secret: string };
  const post = (path: string, json: unknown, k = key.secret) => s.fetch(path, { method: 'POST', json, key: k });

  beforeAll(async () => {
    s = await startTestServer();
    key = await s.newKey('swarm');
  });
  afterAll(() => s.stop());

  it('declare allocates pro rata, exactly to the micro-USD, exports CSV, and charges the flat 25.00', async () => {
    const r = await post('/api/v1/orn/declare', {
      event_ref: 'inc-1',
      graph_id: 'g1',
      loss_usd: '100.00',
      parties: [
        { party_id: 'a', contributed_value_usd: '1' },
        { party_id: 'b', contributed_value_usd: '1' },
        { party_id: 'c', contributed_value_usd: '1' },
      ],
    });
    expect(r.status).toBe(200);
    const b = await r.json();
    // 100 / 3 = 33.33 each in whole cents, the one cent left goes to the first of the tied remainders
    expect(b.allocations.map((a: { allocation_usd: string }) => a.allocation_usd)).toEqual(['33.34', '33.33', '33.33']);
    expect(b.allocations.map((a: { share_pct: string }) => a.share_pct)).toEqual(['33.3333', '33.3333', '33.3333']);
    expect(b).toMatchObject({
      loss_usd: '100.00',
      contributed_total_usd: '3.00',
      charge: { sku: 'ga_declare', amount_usd: '25.00', nap: false },
    });
    const lines = b.export.content.trim().split('\r\n');
    expect(lines[0]).toBe('party_id,contributed_value_usd,share_pct,allocation_usd');
    expect(lines[1]).toBe('a,1.00,33.3333,33.34');
    expect((await meterRows(s, key.id)).at(-1)).toEqual({ sku: 'ga_declare', micros: 25_000_000, nap: 0, ref: b.receipt_id });

    const w = await (
      await post('/api/v1/orn/declare', {
        event_ref: 'inc-2',
        loss_usd: '9000',
        parties: [
          { party_id: 'planner', contributed_value_usd: '20000' },
          { party_id: 'exec', contributed_value_usd: '10000' },
          { party_id: 'idle', contributed_value_usd: '0' },
        ],
      })
    ).json();
    expect(w.allocations.map((a: { allocation_usd: string }) => a.allocation_usd)).toEqual(['6000.00', '3000.00', '0.00']);
  });

  it('SHARP charges agents x 1.20 x events in one meter row', async () => {
    const r = await post('/api/v1/orn/sharp', { graph_id: 'g1', agents_in_graph: 5, events: 3 });
    expect(r.status).toBe(200);
    const b = await r.json();
    expect(b).toMatchObject({ agents_in_graph: 5, events: 3, sharp_toll_usd: '1.20', charge: { sku: 'sharp', amount_usd: '18.00' } });
    expect((await meterRows(s, key.id)).at(-1)).toEqual({ sku: 'sharp', micros: 18_000_000, nap: 0, ref: b.receipt_id });
  });

  it('bad input is 400 naming the field and changes nothing', async () => {
    const before = await meterRows(s, key.id);
    const cases = [
      ['/api/v1/orn/declare', { event_ref: 'e', loss_usd: '1', parties: [{ party_id: 'a', contributed_value_usd: '1' }] }, 'parties'],
      [
        '/api/v1/orn/declare',
        {
          event_ref: 'e',
          loss_usd: '1',
          parties: [
            { party_id: 'a', contributed_value_usd: '1' },
            { party_id: 'a', contributed_value_usd: '2' },
          ],
        },
        'parties',
      ],
      [
        '/api/v1/orn/declare',
        {
          event_ref: 'e',
          loss_usd: '1',
          parties: [
            { party_id: 'a', contributed_value_usd: '0' },
            { party_id: 'b', contributed_value_usd: '0' },
          ],
        },
        'parties',
      ],
      [
        '/api/v1/orn/declare',
        {
          event_ref: 'e',
          loss_usd: '1',
          parties: [
            { party_id: 'a', contributed_value_usd: '-1' },
            { party_id: 'b', contributed_value_usd: '2' },
          ],
        },
        'parties.0.contributed_value_usd',
      ],
      ['/api/v1/orn/declare', { event_ref: 'e', loss_usd: 5, parties: [] }, 'loss_usd'],
      ['/api/v1/orn/sharp', { graph_id: 'g', agents_in_graph: 0, events: 1 }, 'agents_in_graph'],
      ['/api/v1/orn/sharp', { graph_id: 'g', agents_in_graph: 2, events: 1.5 }, 'events'],
    ] as const;
    for (const [path, body, field] of cases) {
      const r = await post(path, body);
      expect(r.status, field).toBe(400);
      expect((await r.json()).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect(await meterRows(s, key.id)).toEqual(before);
    expect(Number((await s.ctx.ledger.read.execute('SELECT COUNT(*) AS n FROM orn_events')).rows[0]!.n)).toBe(3);
  });

  it('scale: agents x events x SHARP plus declares x 25, illustrative', async () => {
    const d = await (await s.fetch('/api/v1/orn/scale?agents_in_graph=10&events_per_month=100&ga_declares_per_month=2')).json();
    expect(d).toMatchObject({ layer: 'orn', illustrative: true, monthly_usd: '1250.00', annual_usd: '15000.00' });
    expect(d.lines[0]).toMatchObject({ units: 1000, toll_usd: '1.20', monthly_usd: '1200.00' });
    expect((await s.fetch('/api/v1/orn/scale?agents_in_graph=abc')).status).toBe(400);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';

describe('metered areas: every /scale is an illustrative projection; every route is documented', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  it('require-receipt scale: challenges x 0.02', async () => {
    const d = await (await s.fetch('/api/v1/require-receipt/scale?challenges_per_month=2500')).json();
    expect(d).toMatchObject({ layer: 'require_receipt', illustrative: true, monthly_usd: '50.00', annual_usd: '600.00' });
    expect(d.lines).toEqual([{ line: 'challenges x challenge toll', units: 2500, toll_usd: '0.02', monthly_usd: '50.00' }]);
  });

  it('every scale answers with defaults, sums its lines, and refuses a count above 10^9', async () => {
    for (const layer of ['nap', 'pdtr', 'orn', 'require-receipt']) {
      const d = await (await s.fetch(`/api/v1/${layer}/scale`)).json();
      expect(d.illustrative, layer).toBe(true);
      expect(d.note, layer).toMatch(/illustrative/i);
      const micros = (usd: string) => BigInt(usd.replace('.', '').padEnd(usd.indexOf('.') + 7, '0'));
      const sum = d.lines.reduce((a: bigint, l: { monthly_usd: string }) => a + micros(l.monthly_usd), 0n);
      expect(sum, layer).toBe(micros(d.monthly_usd));
      expect(micros(d.annual_usd)).toBe(12n * micros(d.monthly_usd));
      const q = Object.keys(d.inputs)[0];
      const bad = await s.fetch(`/api/v1/${layer}/scale?${q}=1000000001`);
      expect(bad.status, layer).toBe(400);
      expect((await bad.json()).errors[0].field).toBe(q);
    }
  });

  it('every route of these areas carries its RouteDoc, with the schemas it parses', () => {
    const prefixes = [
      '/api/v1/execute-gate',
      '/api/v1/restraint',
      '/api/v1/clear/',
      '/tcb/',
      '/api/v1/spoliation-seal',
      '/api/v1/nap/',
      '/api/v1/bind-payment',
      '/api/v1/pdtr/',
      '/api/v1/orn/',
      '/api/v1/relay/',
      '/go/',
      '/api/v1/require-receipt/',
    ];
    const mine = s.app.router.routes.filter((r) => prefixes.some((p) => r.path.startsWith(p)));
    expect(mine.length).toBeGreaterThanOrEqual(19);
    for (const r of mine) {
      expect(r.doc, r.path).toBeDefined();
      expect(r.doc!.summary.length, r.path).toBeGreaterThan(10);
      expect(r.doc!.response, r.path).toBeDefined();
      if (r.method === 'POST') {
        expect(r.doc!.body, r.path).toBeDefined();
        // Writes are keyed and metered; only the public RR-1 demo act is open, and says so.
        expect(r.doc!.auth, r.path).toBe(r.path.includes('/demo/') ? 'demo' : 'key');
      }
    }
  });
});

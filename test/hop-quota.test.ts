import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { periodReset, periodStart } from '../src/domain/quota.ts';
import { invalidateKeyCache } from '../src/ledger/key-cache.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('quota periods (pure)', () => {
  it('starts months, ISO weeks and days at UTC midnight, and resets at the next one', () => {
    const sunday = new Date('2026-11-29T23:59:59.999Z');
    expect(periodStart('month', sunday)).toBe('2026-11-01T00:00:00.000Z');
    expect(periodReset('month', sunday)).toBe('2026-12-01T00:00:00.000Z');
    expect(periodStart('week', sunday)).toBe('2026-11-23T00:00:00.000Z');
    expect(periodReset('week', sunday)).toBe('2026-11-30T00:00:00.000Z');
    expect(periodStart('week', new Date('2026-11-23T00:00:00Z'))).toBe('2026-11-23T00:00:00.000Z');
    expect(periodStart('day', sunday)).toBe('2026-11-29T00:00:00.000Z');
    expect(periodReset('month', new Date('2026-12-31T12:00:00Z'))).toBe('2027-01-01T00:00:00.000Z');
    expect(periodStart('none', sunday)).toBe('');
    expect(periodReset('none', sunday)).toBeNull();
  });
});

describe('hop limit per key per period', () => {
  let s: TestServer;
  let ops: { id: string; secret: string; accountId: string };
  const post = (path: string, key: string, json?: unknown) =>
    s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

  beforeAll(async () => {
    s = await startTestServer();
    ops = await s.newKey('ops');
  });
  afterAll(() => s.stop());

  async function keyWith(limit: number, period?: string) {
    return (await (
      await post('/v1/keys', ops.secret, { name: `q${limit}`, hop_limit: limit, ...(period ? { hop_period: period } : {}) })
    ).json()) as { id: string; secret: string };
  }
  /** Adds hops to a key's counter of a UTC day, as a batch of that day would have. */
  const countedOn = (id: string, day: string, hops: number) =>
    s.ctx.ledger.write((tx) =>
      tx.execute({
        sql: 'INSERT INTO hop_counters (key_id, day, hops) VALUES (?, ?, ?) ON CONFLICT (key_id, day) DO UPDATE SET hops = hop_counters.hops + excluded.hops',
        args: [id, day, hops],
      }),
    );
  const dayBefore = (iso: string) => new Date(Date.parse(iso) - 86_400_000).toISOString().slice(0, 10);

  it('counts monthly by default; /v1/me shows the period, used, remaining and the reset; the 402 names the dashboard', async () => {
    const fuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id;
    const k = await keyWith(2);
    for (let i = 0; i < 2; i++) expect((await post('/v1/fuse/hop', k.secret, { fuse_id: fuse })).status).toBe(200);
    const me = await (await s.fetch('/v1/me', { key: k.secret })).json();
    expect(me.usage).toMatchObject({
      period: 'month',
      period_start: periodStart('month'),
      resets_at: periodReset('month'),
      hops_used: 2,
      hops_remaining: 0,
    });

    const over = await post('/v1/fuse/hop', k.secret, { fuse_id: fuse });
    expect(over.status).toBe(402);
    const p = await over.json();
    expect(p).toMatchObject({
      code: 'hop_limit_exceeded',
      period: 'month',
      resets_at: periodReset('month'),
      dashboard_url: '/dashboard/keys',
    });
    expect(JSON.stringify(p)).not.toContain('npm run');

    // The period turns over: the count starts again (the hops made are now of an earlier month).
    await s.ctx.ledger.write((tx) => tx.execute({ sql: "UPDATE hop_counters SET day = '2020-01-01' WHERE key_id = ?", args: [k.id] }));
    // Changed behind the process's back: its auth cache may hold the count for AUTH_CACHE_MS, as documented.
    invalidateKeyCache(s.ctx.ledger.read);
    expect((await (await s.fetch('/v1/me', { key: k.secret })).json()).usage.hops_used).toBe(0);
    expect((await post('/v1/fuse/hop', k.secret, { fuse_id: fuse })).status).toBe(200);
    expect((await (await s.fetch('/v1/me', { key: k.secret })).json()).usage).toMatchObject({ hops_used: 1, hops_remaining: 1 });

    // An operator raises it through the API, as the 402 says.
    expect((await post(`/v1/keys/${k.id}/limit`, ops.secret, { hop_limit: 5 })).status).toBe(200);
    expect((await (await s.fetch('/v1/me', { key: k.secret })).json()).usage.hops_remaining).toBe(4);
  });

  it('the database and the code agree on where a week and a day begin; "none" never resets', async () => {
    const fuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id;
    for (const period of ['week', 'day'] as const) {
      const k = await keyWith(3, period);
      expect((await post('/v1/fuse/lookup?fuse_id=' + fuse, k.secret)).status).toBe(405);
      expect((await s.fetch(`/v1/fuse/lookup?fuse_id=${fuse}`, { key: k.secret })).status).toBe(200);
      // Hops of the day before the period starts are not counted; hops of its first day are.
      await countedOn(k.id, dayBefore(periodStart(period)), 5);
      expect((await (await s.fetch('/v1/me', { key: k.secret })).json()).usage).toMatchObject({
        period,
        hops_used: 1,
        resets_at: periodReset(period),
      });
      if (periodStart(period).slice(0, 10) !== new Date().toISOString().slice(0, 10)) {
        await countedOn(k.id, periodStart(period).slice(0, 10), 1);
        expect((await (await s.fetch('/v1/me', { key: k.secret })).json()).usage.hops_used).toBe(2);
      }
    }
    const forever = await keyWith(1, 'none');
    expect((await s.fetch(`/v1/fuse/lookup?fuse_id=${fuse}`, { key: forever.secret })).status).toBe(200);
    expect((await s.fetch(`/v1/fuse/lookup?fuse_id=${fuse}`, { key: forever.secret })).status).toBe(402);
    expect((await (await s.fetch('/v1/me', { key: forever.secret })).json()).usage).toMatchObject({
      period: 'none',
      resets_at: null,
      hops_remaining: 0,
    });
  });

  it('HOP_LIMIT_PERIOD sets the default period of new keys', async () => {
    const daily = await startTestServer({ HOP_LIMIT_PERIOD: 'day' });
    try {
      const k = await daily.newKey('daily');
      expect((await (await daily.fetch('/v1/me', { key: k.secret })).json()).usage).toMatchObject({
        period: 'day',
        resets_at: periodReset('day'),
      });
    } finally {
      await daily.stop();
    }
  });
});

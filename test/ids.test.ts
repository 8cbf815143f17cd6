import { describe, expect, it } from 'vitest';
import { newId, newSortableId, nowIso } from '../src/ids.ts';
import { startTestServer } from './support/server.ts';

describe('ids', () => {
  it('sortable ids sort by the millisecond they were made in, and stay unguessable', () => {
    const times = [0, 1, 255, 256, 1_764_000_000_000, 1_764_000_000_001, 2 ** 47];
    const ids = times.map((t) => newSortableId('mfst', t));
    for (const id of ids) expect(id).toMatch(/^mfst_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
    // Plain string order (SQLite's BINARY collation, JavaScript's sort) is time order.
    expect([...ids].reverse().sort()).toEqual(ids);
    // Made in one millisecond, they differ by their 128 random bits.
    const same = new Set(Array.from({ length: 10_000 }, () => newSortableId('mfst', 42)));
    expect(same.size).toBe(10_000);
    expect(newId('fuse')).toMatch(/^fuse_[A-Za-z0-9_-]{22}$/);
  });

  it('nowIso formats each instant it is given, not the last one it formatted', () => {
    const a = new Date('2026-11-27T10:00:00.001Z');
    const b = new Date('2026-11-27T10:00:00.002Z');
    expect([nowIso(a), nowIso(a), nowIso(b), nowIso(a)]).toEqual([a.toISOString(), a.toISOString(), b.toISOString(), a.toISOString()]);
    expect(nowIso()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Asking for the current time in between changes neither answer.
    expect([nowIso(b), nowIso(), nowIso(b)]).toEqual([b.toISOString(), expect.stringMatching(/^2\d{3}-/), b.toISOString()]);
    expect(() => nowIso(new Date(Number.NaN))).toThrow(RangeError);
  });

  it('rows written per act are keyed by sortable ids (an ASTL manifest, a SHARP event, an oracle aggregate)', async () => {
    const s = await startTestServer();
    try {
      const key = await s.newKey('ids');
      const publish = await (
        await s.fetch('/api/v1/astl/publish', { key: key.secret, json: { entity: 'agent:ids', preset: 'agentic' } })
      ).json();
      expect(publish.manifest.manifest_id).toMatch(/^mfst_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
      const sharp = await s.fetch('/api/v1/orn/sharp', { key: key.secret, json: { graph_id: 'g', agents_in_graph: 5, events: 3 } });
      expect(sharp.status).toBe(200);
      const id = String((await s.ctx.ledger.read.execute('SELECT id FROM orn_events')).rows[0]!.id);
      expect(id).toMatch(/^sharp_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
      const aggregate = await (
        await s.fetch('/api/v1/oracle/aggregate', {
          key: key.secret,
          json: { metric: 'm', readings: ['network_a', 'network_b', 'network_c'].map((source_id) => ({ source_id, value: '1' })) },
        })
      ).json();
      expect(aggregate.aggregate_id).toMatch(/^agg_[0-9a-f]{12}[A-Za-z0-9_-]{22}$/);
      expect(String((await s.ctx.ledger.read.execute('SELECT id FROM oracle_aggregates')).rows[0]!.id)).toBe(aggregate.aggregate_id);
    } finally {
      await s.stop();
    }
  });
});

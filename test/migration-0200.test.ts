/**
 * Migration 0200 (issue 26) on a database written by main before tiles
 * (test/fixtures/main-7b6fb56.*, made by test/fixtures/make-main-7b6fb56.ts
 * with that commit's code: hops, acts, a blow, classify, ASTL, a trigger
 * published and fired, a clearing seal, more acts after it).
 *
 * After the upgrade every log keeps its size and root, every receipt issued
 * before it resolves to the same evidence, usage and hop counts are what the
 * old code answered, the logs read back as C2SP tiles, and new acts and the
 * next clearing seal go on from there.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sealClearing } from '../src/ledger/clearing.ts';
import { receiptIndex } from '../src/ledger/receipts.ts';
import { oldMainFixture, startOnOldMain } from './support/old-main.ts';
import type { TestServer } from './support/server.ts';
import { readTiledLog } from './support/tile-client.ts';

const expected = JSON.parse(readFileSync(oldMainFixture('expected.json'), 'utf8')) as {
  made_at: string;
  logs: Record<string, { tree_size: number; root_hash: string }>;
  me: Record<string, { key_id: string; usage: { total_usd: string; nap_usd: string; hops_used: number } }>;
  receipt_ids: string[];
  evidence: Record<string, Record<string, unknown>>;
};

describe('migration 0200 on a database made by main before tiles', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startOnOldMain();
  }, 60_000);
  afterAll(() => s.stop());

  it('keeps every log at its size and root, and the old tables are gone', async () => {
    for (const [name, head] of Object.entries(expected.logs)) {
      expect(await (await s.fetch(`/api/v1/logs/${name}`)).json()).toMatchObject(head);
    }
    const tables = (await s.ctx.ledger.read.execute("SELECT name FROM sqlite_master WHERE type = 'table'")).rows.map((r) => String(r.name));
    for (const gone of ['log_entries', 'log_nodes', 'receipts', 'meter', 'key_hops_monthly']) expect(tables).not.toContain(gone);
  });

  it('resolves every receipt issued before, with the very evidence the old code served', async () => {
    for (const id of expected.receipt_ids) {
      expect(receiptIndex(id)).toBeUndefined();
      expect((await s.fetch(`/v1/receipts/${id}`, { headers: { accept: 'application/json' } })).status, id).toBe(200);
    }
    for (const [id, evidence] of Object.entries(expected.evidence)) {
      expect(await (await s.fetch(`/v1/receipts/${id}`, { headers: { accept: 'application/json' } })).json()).toEqual(evidence);
    }
  });

  it('answers the usage the old code answered, and the hops of the current period', async () => {
    const sameDay = new Date().toISOString().slice(0, 10) === expected.made_at.slice(0, 10);
    const sameMonth = new Date().toISOString().slice(0, 7) === expected.made_at.slice(0, 7);
    for (const [name, m] of Object.entries(expected.me)) {
      // The secrets are not in the fixture: read what /v1/me reads, for the key.
      const { usage } = await import('../src/ledger/meter.ts');
      const { getApiKey } = await import('../src/ledger/api-keys.ts');
      const u = await usage(s.ctx.ledger.read, m.key_id);
      expect([u.total_usd, u.nap_usd], name).toEqual([m.usage.total_usd, m.usage.nap_usd]);
      const key = (await getApiKey(s.ctx.ledger.read, m.key_id))!;
      const current = key.hop_period === 'day' ? sameDay : sameMonth;
      expect(key.hops_used, name).toBe(current ? m.usage.hops_used : 0);
    }
  });

  it('serves every log as C2SP tiles a stranger verifies', async () => {
    for (const name of Object.keys(expected.logs)) {
      const info = await (await s.fetch(`/api/v1/logs/${name}`)).json();
      const prefix = new URL(info.tiles_url).pathname;
      const read = await readTiledLog(
        async (p) => new Uint8Array(await (await s.fetch(prefix + p)).arrayBuffer()),
        info.verifier_key,
        info.origin,
      );
      expect(read.size).toBe(expected.logs[name]!.tree_size);
    }
  });

  it('goes on: a new receipt takes the next index, and the next clearing covers old and new receipts exactly', async () => {
    const key = await s.newKey('after');
    const fuse = (await (await s.fetch('/v1/fuses', { key: key.secret, json: {} })).json()).fuse_id;
    const hop = await (await s.fetch('/v1/fuse/hop', { key: key.secret, json: { fuse_id: fuse } })).json();
    // The fuse's creation is receipt 297 (the fixture's log held 297), the hop 298.
    expect(receiptIndex(hop.receipt_id)).toBe(expected.logs.receipts!.tree_size + 1);
    const { attestation } = await s.ctx.ledger.write((tx) => sealClearing(tx, new Date()));
    // The fixture's seal covered [0, 257); this one the 40 acts after it and the two new receipts.
    expect(attestation.receipts.from).toBe(257);
    expect(attestation.receipts.to).toBe(expected.logs.receipts!.tree_size + 2);
    const old = await s.ctx.ledger.read.execute({
      sql: `SELECT sku, COUNT(*) AS n, SUM(amount_micros) AS m FROM meter_archive WHERE ref IN (SELECT id FROM receipt_ids_legacy WHERE log_index >= 257) GROUP BY sku ORDER BY sku`,
    });
    const want = new Map(old.rows.map((r) => [String(r.sku), { count: Number(r.n), micros: BigInt(Number(r.m)) }]));
    want.set('execute_gate', { count: want.get('execute_gate')!.count + 1, micros: want.get('execute_gate')!.micros + 100_000n });
    expect(attestation.per_sku.map((x) => [x.sku, x.count, x.amount_micros])).toEqual(
      [...want].map(([sku, t]) => [sku, t.count, t.micros.toString()]),
    );
    expect(attestation.receipts.acts).toContainEqual({ kind: 'fuse_create', decision: 'LIVE', count: 1 });
  });
});

/**
 * Migration 0300: an entity's head is its own row, and each manifest names the
 * version before it. On the database main wrote before tiles
 * (test/fixtures/main-7b6fb56.*), with its published manifest and, beside it,
 * an entity of three versions stored as that code stored them, the heads and
 * chains come out of the old rows, and the entity's owner publishes on from them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOnOldMain } from './support/old-main.ts';
import type { TestServer } from './support/server.ts';

let s: TestServer;
const owner = 'key_a8Wx_vSd-sq6rbHXx8nJ3w';
const fixture = {
  manifest_id: 'mfst_6t-5y9n1pbRUGHIdD_e5tg',
  leaf_hash: 'Ptejx/G4UjWtKwa+xExhbv8bhXXt4ZzqUPh23m/NkAU=',
  receipt_id: 'rcpt_01a213622152WKkrraovWhBHV7K3bJWZVQ',
};

beforeAll(async () => {
  s = await startOnOldMain(async (db) => {
    // Three versions of one entity, inserted out of order: the chain follows versions, not rows.
    for (const v of [2, 3, 1]) {
      await db.execute({
        sql: 'INSERT INTO astl_manifests (id, entity, version, key_id, act_kinds, log_index, leaf_hash, receipt_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        args: [
          `mfst_chain_v${v}`,
          'agent:chain',
          v,
          'key_chain_owner',
          '["pay"]',
          1000 + v,
          `hash-${v}`,
          `rcpt_chain_${v}`,
          '2026-11-20T10:00:00.000Z',
        ],
      });
    }
  });
}, 60_000);
afterAll(() => s.stop());

const rows = async (sql: string) => (await s.ctx.ledger.read.execute(sql)).rows.map((r) => ({ ...r }));

it("keeps one head per entity, its owner's and its newest version's", async () => {
  expect(await rows('SELECT entity, key_id, version, manifest_id FROM astl_entities ORDER BY entity')).toEqual([
    { entity: 'agent:chain', key_id: 'key_chain_owner', version: 3, manifest_id: 'mfst_chain_v3' },
    { entity: 'agent:fixture', key_id: owner, version: 1, manifest_id: fixture.manifest_id },
  ]);
});

it('links each manifest to the version before it, and keeps only what its leaf does not say', async () => {
  expect(await rows("SELECT name FROM pragma_table_info('astl_manifests')")).toEqual([
    { name: 'id' },
    { name: 'log_index' },
    { name: 'receipt_id' },
    { name: 'prev_id' },
  ]);
  expect(await rows("SELECT id, log_index, receipt_id, prev_id FROM astl_manifests WHERE id LIKE 'mfst_chain_%' ORDER BY id")).toEqual([
    { id: 'mfst_chain_v1', log_index: 1001, receipt_id: 'rcpt_chain_1', prev_id: null },
    { id: 'mfst_chain_v2', log_index: 1002, receipt_id: 'rcpt_chain_2', prev_id: 'mfst_chain_v1' },
    { id: 'mfst_chain_v3', log_index: 1003, receipt_id: 'rcpt_chain_3', prev_id: 'mfst_chain_v2' },
  ]);
});

it('serves the old manifest as before: lookup and verify by id, with the leaf hash of its leaf', async () => {
  const look = await (await s.fetch('/api/v1/astl/lookup?entity=agent:fixture')).json();
  expect(look).toMatchObject({
    entity: 'agent:fixture',
    latest_version: 1,
    manifests: [
      {
        index: 0,
        leaf_hash: fixture.leaf_hash,
        receipt_id: fixture.receipt_id,
        manifest: { manifest_id: fixture.manifest_id, version: 1, act_kinds: ['pay', 'wire'] },
      },
    ],
  });
  const verified = await (await s.fetch('/api/v1/astl/verify', { method: 'POST', json: { manifest_id: fixture.manifest_id } })).json();
  expect(verified).toMatchObject({ included: true, index: 0, leaf_hash: fixture.leaf_hash, receipt_id: fixture.receipt_id });
  expect(
    await (await s.fetch('/api/v1/astl/verify', { method: 'POST', json: { manifest: look.manifests[0].manifest } })).json(),
  ).toMatchObject({ included: true, index: 0 });
});

it("lets the entity's owner publish its next versions on the migrated head, and refuses anyone else", async () => {
  const ownersKey = await s.newKey('owner-again', undefined, 'operator', owner);
  const publish = (secret: string) =>
    s.fetch('/api/v1/astl/publish', { key: secret, json: { entity: 'agent:fixture', preset: 'agentic' } });
  const v2 = await (await publish(ownersKey.secret)).json();
  const v3 = await (await publish(ownersKey.secret)).json();
  expect([v2.manifest.version, v3.manifest.version]).toEqual([2, 3]);
  const stranger = await s.newKey('stranger');
  const refused = await publish(stranger.secret);
  expect(refused.status).toBe(403);
  expect((await refused.json()).code).toBe('entity_owned');
  const look = await (await s.fetch('/api/v1/astl/lookup?entity=agent:fixture')).json();
  expect(look.manifests.map((m: { manifest: { version: number }; leaf_hash: string }) => [m.manifest.version, m.leaf_hash])).toEqual([
    [3, v3.leaf_hash],
    [2, v2.leaf_hash],
    [1, fixture.leaf_hash],
  ]);
  expect(
    (await (await s.fetch('/api/v1/astl/lookup?entity=agent:fixture&limit=2')).json()).manifests.map((m: { index: number }) => m.index),
  ).toEqual([v3.index, v2.index]);
});

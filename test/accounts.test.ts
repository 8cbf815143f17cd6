import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../src/ledger/api-keys.ts';
import { migrate } from '../src/ledger/migrate.ts';
import { twoAccounts, type TestKey } from './support/accounts.ts';
import { startTestServer, tempDir, TEST_ENGINE, type TestServer } from './support/server.ts';

describe('accounts own their objects', () => {
  let s: TestServer;
  let ops: TestKey;
  let bot: TestKey;
  let stranger: TestKey;
  const post = (path: string, key: string, json?: unknown) =>
    s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

  beforeAll(async () => {
    s = await startTestServer();
    ({ ops, bot, stranger } = await twoAccounts(s));
  });
  afterAll(() => s.stop());

  it('every key of an account sees its fuses and licences; another account gets 404', async () => {
    const fuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id as string;
    const botList = await (await s.fetch('/v1/fuses', { key: bot.secret })).json();
    expect(botList.data.map((f: { fuse_id: string }) => f.fuse_id)).toContain(fuse);
    expect((await post('/v1/fuse/hop', bot.secret, { fuse_id: fuse })).status).toBe(200);

    const theirs = await post('/v1/fuse/hop', stranger.secret, { fuse_id: fuse });
    expect(theirs.status).toBe(404);
    expect((await theirs.json()).code).toBe('unknown_fuse');
    expect((await post(`/v1/fuses/${fuse}/dead`, stranger.secret)).status).toBe(404);
    expect((await (await s.fetch('/v1/fuses', { key: stranger.secret })).json()).data).toEqual([]);

    expect((await post('/v1/pas/licenses/lic_shared/charge', ops.secret)).status).toBe(200);
    const snap = await s.fetch('/v1/pas/licenses/lic_shared', { key: bot.secret });
    expect((await snap.json()).state).toBe('LIVE');
    expect((await (await s.fetch('/v1/pas/licenses/lic_shared', { key: stranger.secret })).json()).state).not.toBe('LIVE');
  });

  it('receipts of one key are usable by every key of the account, and by no other account', async () => {
    const fuse = (await (await post('/v1/fuses', ops.secret, { state: 'LIVE' })).json()).fuse_id as string;
    const hop = await (await post('/v1/fuse/hop', bot.secret, { fuse_id: fuse })).json();
    const mine = await post('/tcb/counterfactual-replay', ops.secret, { receipt_id: hop.receipt_id });
    expect(mine.status).not.toBe(404);
    const theirs = await post('/tcb/counterfactual-replay', stranger.secret, { receipt_id: hop.receipt_id });
    expect(theirs.status).toBe(404);
    expect((await theirs.json()).code).toBe('unknown_receipt');
  });

  it('every key of an account sees its conformity packs, depository twins, foundry tenants and payment bindings; another account does not', async () => {
    const system = { name: 'Assistant', version: '1.0.0', provider: 'Example SE', intended_purpose: 'Drafts replies for a human agent' };
    const pack = await (await post('/api/v1/conformity/generate', bot.secret, { category_id: 'companion', system })).json();
    expect((await s.fetch(`/api/v1/conformity/packs/${pack.pack_id}`, { key: ops.secret })).status).toBe(200);
    expect((await s.fetch(`/api/v1/conformity/packs/${pack.pack_id}`, { key: stranger.secret })).status).toBe(404);

    // One twin per account: a key of the account continues the chain another key started; another account has none.
    const attest = (key: string, body: unknown) => post('/api/v1/depository/attest', key, body);
    const first = await (
      await attest(bot.secret, { event_type: 'tokenize', asset_id: 'ISIN-SHARED', units: 100, custodian: 'cust-a' })
    ).json();
    const next = await (await attest(ops.secret, { event_type: 'burn', asset_id: 'ISIN-SHARED', units: 10 })).json();
    expect(next.chain).toMatchObject({ seq: 2, prev_hash: first.chain.chain_hash });
    const theirs = await attest(stranger.secret, { event_type: 'burn', asset_id: 'ISIN-SHARED', units: 10 });
    expect(theirs.status).toBe(404);
    expect((await theirs.json()).code).toBe('unknown_asset');

    const run = await post('/api/v1/foundry/pipeline/run', bot.secret, {
      tenant_id: 'shared-mga',
      readings: [
        { source_id: 'network_a', value: '0.82' },
        { source_id: 'network_b', value: '0.80' },
        { source_id: 'sealed_reading', value: '0.81' },
      ],
      template_id: 'ai_model_change',
      threshold: { metric: 'model_drift_score', operator: 'gte', value: '0.99' },
      exposure_usd: '1000.00',
    });
    expect(run.status).toBe(200);
    expect((await s.fetch('/api/v1/foundry/projection/shared-mga', { key: ops.secret })).status).toBe(200);
    expect((await s.fetch('/api/v1/foundry/projection/shared-mga', { key: stranger.secret })).status).toBe(404);

    const hash = 'ab'.repeat(32);
    expect((await post('/api/v1/bind-payment', bot.secret, { payment_hash: hash, action_ref: 'order-1' })).status).toBe(200);
    const again = await (await post('/api/v1/bind-payment', ops.secret, { payment_hash: hash, action_ref: 'order-2' })).json();
    expect(again).toMatchObject({ code: 'payment_already_bound', bound_to: { action_ref: 'order-1' } });
    expect(
      (await (await post('/api/v1/bind-payment', stranger.secret, { payment_hash: hash, action_ref: 'x' })).json()).bound_to,
    ).toBeUndefined();
  });

  it('/v1/me names the account and the role', async () => {
    const me = await (await s.fetch('/v1/me', { key: bot.secret })).json();
    expect(me).toMatchObject({ id: bot.id, account_id: ops.accountId, role: 'agent' });
  });
});

// Migrations of older embedded files: the PostgreSQL schema starts at the 0310 baseline.
describe.skipIf(TEST_ENGINE === 'postgres')('migration: each existing key becomes its own account', () => {
  it('keeps a pre-account key working and owning its fuse', async () => {
    const dir = tempDir();
    const url = `file:${join(dir, 'fusegate.db')}`;
    const client = createClient({ url });
    const migrations = join(process.cwd(), 'src/ledger/migrations');
    await client.execute('CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
    for (const file of readdirSync(migrations)
      .filter((f) => f.endsWith('.sql') && f < '0141')
      .sort()) {
      const sql = readFileSync(join(migrations, file), 'utf8').replace(/--[^\n]*/g, '');
      for (const stmt of sql
        .split(';')
        .map((x) => x.trim())
        .filter(Boolean))
        await client.execute(stmt);
      await client.execute({
        sql: 'INSERT INTO schema_migrations VALUES (?, ?)',
        args: [file.replace(/\.sql$/, ''), new Date().toISOString()],
      });
    }
    const secret = 'fg_live_legacylegacylegacylegacylegacylegacy12';
    const now = new Date().toISOString();
    await client.execute({
      sql: 'INSERT INTO api_keys (id, name, secret_hash, prefix, hop_limit, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      args: ['key_legacy', 'legacy', hashSecret(secret), 'fg_live_lega', 100, now],
    });
    await client.execute({
      sql: "INSERT INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES ('fuse_legacy', 'key_legacy', 'LIVE', NULL, ?, ?)",
      args: [now, now],
    });
    expect(await migrate(client)).toContain('0141_accounts');
    client.close();

    const s = await startTestServer({}, dir);
    try {
      const me = await (await s.fetch('/v1/me', { key: secret })).json();
      expect(me).toMatchObject({ id: 'key_legacy', account_id: 'key_legacy', role: 'operator' });
      const hop = await s.fetch('/v1/fuse/hop', { method: 'POST', key: secret, json: { fuse_id: 'fuse_legacy' } });
      expect((await hop.json()).decision).toBe('PERMIT');
      // A new key of that account sees the legacy fuse too.
      const added = await s.newKey('second', 100, 'agent', 'key_legacy');
      expect((await s.fetch('/v1/fuse/lookup?fuse_id=fuse_legacy', { key: added.secret })).status).toBe(200);
    } finally {
      await s.stop();
    }
  });
});

describe.skipIf(TEST_ENGINE === 'postgres')('migration 0190: the records of a key that joined an account move to the account', () => {
  it('moves packs, runs, session leaves, bindings and twins with their chain links; of one twin id two keys used, one moves', async () => {
    const s = await startTestServer();
    try {
      const { ops, bot } = await twoAccounts(s);
      const bot2 = await s.newKey('bot2', 1000, 'agent', ops.accountId);
      const db = createClient({ url: s.config.DATABASE_URL, intMode: 'number' });
      try {
        const now = new Date().toISOString();
        const twin = (key: string, asset: string) => [
          {
            sql: "INSERT INTO depository_assets (key_id, asset_id, custody_units, token_supply, custodian, seq, chain_hash, updated_at) VALUES (?, ?, 1, 1, NULL, 1, 'c', ?)",
            args: [key, asset, now],
          },
          {
            sql: "INSERT INTO depository_events (key_id, asset_id, seq, event_type, chain_hash, receipt_id, created_at) VALUES (?, ?, 1, 'tokenize', 'c', ?, ?)",
            args: [key, asset, `r_${key}`, now],
          },
        ];
        await db.batch(
          [
            {
              sql: "INSERT INTO conformity_packs (id, key_id, category_id, pack_hash, receipt_id, created_at, pack) VALUES ('pk_old', ?, 'companion', 'h', 'r', ?, '{}')",
              args: [bot.id, now],
            },
            {
              sql: "INSERT INTO foundry_runs (id, key_id, tenant_id, report, receipt_id, created_at) VALUES ('run_old', ?, 'old-mga', '{}', 'r', ?)",
              args: [bot.id, now],
            },
            {
              sql: "INSERT INTO inference_leaves (session_id, idx, key_id, leaf_hash, receipt_id, created_at) VALUES ('inf_old', 0, ?, 'h', 'r', ?)",
              args: [bot.id, now],
            },
            {
              sql: "INSERT INTO pdtr_bindings (payment_hash, action_ref, key_id, receipt_id, created_at) VALUES ('0xold', 'a', ?, 'r', ?)",
              args: [bot.id, now],
            },
            ...twin(bot.id, 'ISIN-ONLY'),
            ...twin(bot.id, 'ISIN-BOTH'),
            ...twin(bot2.id, 'ISIN-BOTH'),
            ...twin(ops.id, 'ISIN-OPS'),
            "DELETE FROM schema_migrations WHERE version = '0190_account_owned_records'",
          ],
          'write',
        );
        expect(await migrate(db)).toEqual(['0190_account_owned_records']);
        const owner = async (sql: string) => String((await db.execute(sql)).rows[0]!.key_id);
        expect(await owner("SELECT key_id FROM conformity_packs WHERE id = 'pk_old'")).toBe(ops.accountId);
        expect(await owner("SELECT key_id FROM foundry_runs WHERE id = 'run_old'")).toBe(ops.accountId);
        expect(await owner("SELECT key_id FROM inference_leaves WHERE session_id = 'inf_old'")).toBe(ops.accountId);
        expect(await owner("SELECT key_id FROM pdtr_bindings WHERE payment_hash = '0xold'")).toBe(ops.accountId);
        const twins = (
          await db.execute(
            "SELECT a.key_id, a.asset_id, e.receipt_id FROM depository_assets a JOIN depository_events e USING (key_id, asset_id) WHERE a.asset_id LIKE 'ISIN-%' AND a.asset_id <> 'ISIN-SHARED' ORDER BY a.asset_id, a.key_id",
          )
        ).rows.map((r) => [String(r.asset_id), String(r.key_id), String(r.receipt_id)]);
        // Every chain link stays with its twin; of ISIN-BOTH one twin moved and one stayed with its key.
        const both = twins.filter(([asset]) => asset === 'ISIN-BOTH');
        expect(both.map(([, k]) => k).sort()).toEqual([ops.accountId, both.find(([, k]) => k !== ops.accountId)![1]].sort());
        expect([bot.id, bot2.id]).toContain(both.find(([, k]) => k !== ops.accountId)![1]);
        for (const [, k, receipt] of both) if (k !== ops.accountId) expect(receipt).toBe(`r_${k}`);
        expect(twins.filter(([asset]) => asset === 'ISIN-ONLY')).toEqual([['ISIN-ONLY', ops.accountId, `r_${bot.id}`]]);
        expect(twins.filter(([asset]) => asset === 'ISIN-OPS')).toEqual([['ISIN-OPS', ops.accountId, `r_${ops.id}`]]);
        expect(Number((await db.execute('SELECT COUNT(*) AS n FROM depository_events')).rows[0]!.n)).toBe(4);
      } finally {
        db.close();
      }
    } finally {
      await s.stop();
    }
  });
});

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../src/ledger/api-keys.ts';
import { migrate } from '../src/ledger/migrate.ts';
import { twoAccounts, type TestKey } from './support/accounts.ts';
import { startTestServer, tempDir, type TestServer } from './support/server.ts';

describe('accounts own their objects', () => {
  let s: TestServer;
  let ops: TestKey;
  let bot: TestKey;
  let stranger: TestKey;
  const post = (path: string, key: string, json?: unknown) => s.fetch(path, { method: 'POST', key, ...(json !== undefined ? { json } : {}) });

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

  it('/v1/me names the account and the role', async () => {
    const me = await (await s.fetch('/v1/me', { key: bot.secret })).json();
    expect(me).toMatchObject({ id: bot.id, account_id: ops.accountId, role: 'agent' });
  });
});

describe('migration: each existing key becomes its own account', () => {
  it('keeps a pre-account key working and owning its fuse', async () => {
    const dir = tempDir();
    const url = `file:${join(dir, 'fusegate.db')}`;
    const client = createClient({ url });
    const migrations = join(process.cwd(), 'src/ledger/migrations');
    await client.execute('CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
    for (const file of readdirSync(migrations).filter((f) => f.endsWith('.sql') && f < '0141').sort()) {
      const sql = readFileSync(join(migrations, file), 'utf8').replace(/--[^\n]*/g, '');
      for (const stmt of sql.split(';').map((x) => x.trim()).filter(Boolean)) await client.execute(stmt);
      await client.execute({ sql: 'INSERT INTO schema_migrations VALUES (?, ?)', args: [file.replace(/\.sql$/, ''), new Date().toISOString()] });
    }
    const secret = 'fg_live_legacylegacylegacylegacylegacylegacy12';
    const now = new Date().toISOString();
    await client.execute({ sql: 'INSERT INTO api_keys (id, name, secret_hash, prefix, hop_limit, created_at) VALUES (?, ?, ?, ?, ?, ?)', args: ['key_legacy', 'legacy', hashSecret(secret), 'fg_live_lega', 100, now] });
    await client.execute({ sql: "INSERT INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES ('fuse_legacy', 'key_legacy', 'LIVE', NULL, ?, ?)", args: [now, now] });
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

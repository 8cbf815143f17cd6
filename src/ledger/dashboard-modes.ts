/**
 * The dashboard's test mode (docs/test-mode.md): the hidden test operator key
 * a signed-in dashboard acts as while its "Test mode" switch is on, beside
 * the hidden live one (account_logins.dashboard_key_id), and what decides
 * which mode a dashboard opens in.
 */
import type { Client } from './sql.ts';
import { createApiKey, getApiKey, type ApiKey } from './api-keys.ts';
import type { Ledger } from './ledger.ts';

/** The account's dashboard test key, if the switch was ever turned on (and the key not revoked since). */
export async function dashboardTestKey(db: Client, accountId: string): Promise<ApiKey | undefined> {
  const r = (await db.execute({ sql: 'SELECT dashboard_test_key_id AS id FROM account_logins WHERE account_id = ?', args: [accountId] }))
    .rows[0];
  const key = r?.id == null ? undefined : await getApiKey(db, String(r.id));
  return key && !key.revoked_at ? key : undefined;
}

/**
 * The account's dashboard test key, made the first time it is asked for: a
 * test operator key whose secret is dropped, as the live dashboard key's is.
 * Two first switches at once make one key each; the one stored last is kept.
 */
export async function ensureDashboardTestKey(
  ledger: Ledger,
  accountId: string,
  limits: { hopLimit: number; hopPeriod: ApiKey['hop_period'] },
): Promise<ApiKey> {
  const existing = await dashboardTestKey(ledger.read, accountId);
  if (existing) return existing;
  const { key } = await createApiKey(ledger, {
    name: 'dashboard (signed-in session, test mode)',
    role: 'operator',
    mode: 'test',
    accountId,
    ...limits,
  });
  await ledger.write((tx) =>
    tx.execute({ sql: 'UPDATE account_logins SET dashboard_test_key_id = ? WHERE account_id = ?', args: [key.id, accountId] }),
  );
  return key;
}

/** Whether the account holds a live key a person made (any but the dashboard's own), active: until it does, the dashboard opens in test mode. */
export async function hasOwnLiveKey(db: Client, accountId: string, dashboardKeyId: string): Promise<boolean> {
  const rs = await db.execute({
    sql: "SELECT id FROM api_keys WHERE account_id = ? AND mode = 'live' AND id <> ? AND revoked_at IS NULL LIMIT 1",
    args: [accountId, dashboardKeyId],
  });
  return rs.rows.length > 0;
}

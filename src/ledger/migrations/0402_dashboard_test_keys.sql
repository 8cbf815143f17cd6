-- Test mode on the dashboard (docs/test-mode.md): the account's second hidden
-- operator key, a test key, that the signed-in dashboard acts as while its
-- "Test mode" switch is on (null until the switch is first turned on).
ALTER TABLE account_logins ADD COLUMN dashboard_test_key_id TEXT;

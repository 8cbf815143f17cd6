-- Spend caps (docs/accounts.md#spend-caps): a monthly cap in micro-USD per key
-- and per account (null: no cap). What a key or an account spent in a UTC month
-- is summed from its usage counters, read with the hop quotas under the write
-- lock (src/ledger/spend-caps.ts); spend_alerts keeps that the 80 % alert of a
-- key or an account went out once in a month (owner_id: a key id or an account id).
ALTER TABLE api_keys ADD COLUMN spend_cap_micros INTEGER;
ALTER TABLE accounts ADD COLUMN spend_cap_micros INTEGER;
CREATE TABLE spend_alerts (
  owner_id TEXT NOT NULL,
  month TEXT NOT NULL,
  at TEXT NOT NULL,
  PRIMARY KEY (owner_id, month)
) WITHOUT ROWID;

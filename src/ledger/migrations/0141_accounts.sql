-- Accounts (issue 14): an account owns its keys and every object its keys make.
-- Each existing key becomes its own account whose id IS the key's id, so every
-- owner column (fuses.key_id, pas_*.key_id, triggers.key_id...) already holds the
-- right account id and no object row needs rewriting. Those columns now mean
-- "owning account"; meter, idempotency and receipts keep the acting key's id.
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL
);
INSERT INTO accounts (id, name, created_at) SELECT id, name, created_at FROM api_keys;
ALTER TABLE api_keys ADD COLUMN account_id TEXT REFERENCES accounts (id);
UPDATE api_keys SET account_id = id;
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);
CREATE INDEX receipts_by_key ON receipts (key_id, created_at);

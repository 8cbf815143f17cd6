-- API keys: the secret is never stored, only its SHA-256 (a 256-bit random secret
-- needs no slow hash); lookup is by hash, so no secret comparison leaks timing.
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  hop_limit INTEGER NOT NULL,
  hops_used INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);

-- One row per charge. Money is integer micro-USD; sku names come from the catalogs.
CREATE TABLE meter (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  key_id TEXT NOT NULL,
  sku TEXT NOT NULL,
  amount_micros INTEGER NOT NULL,
  nap INTEGER NOT NULL DEFAULT 0,
  ref TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX meter_by_key ON meter (key_id, sku);
CREATE INDEX meter_by_time ON meter (created_at);

-- Idempotency-Key records: the first answer to a (key, Idempotency-Key) pair.
CREATE TABLE idempotency (
  key_id TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  status INTEGER,
  headers TEXT,
  body TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (key_id, idem_key)
);

-- Signing in on the site (issue 14). An account may have one login (email +
-- scrypt password hash) and sessions; only hashes of session and reset secrets
-- are stored. The dashboard acts through the account's dashboard key: an operator
-- key whose secret was thrown away at creation, so no bearer can ever use it.
CREATE TABLE account_logins (
  account_id TEXT PRIMARY KEY REFERENCES accounts (id),
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  dashboard_key_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE sessions (
  secret_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);
CREATE TABLE password_resets (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  expires_at TEXT NOT NULL,
  used_at TEXT
);

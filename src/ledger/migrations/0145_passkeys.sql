-- Passkeys (WebAuthn, issue 14): public-key credentials of an account, and the
-- single-use challenges of ceremonies in progress (the challenge is random and
-- public; it is kept only to be used once).
CREATE TABLE passkeys (
  credential_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  public_key TEXT NOT NULL,
  counter INTEGER NOT NULL,
  transports TEXT,
  created_at TEXT NOT NULL,
  last_used_at TEXT
);
CREATE INDEX passkeys_by_account ON passkeys (account_id);
CREATE TABLE webauthn_challenges (
  challenge TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('register', 'signin')),
  account_id TEXT,
  expires_at TEXT NOT NULL
);

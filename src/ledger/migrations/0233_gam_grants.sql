-- GAM credits (SPEC 2.5 layer 8): a clearing window bought grants its credits to the key for the
-- window's weeks; the key's charges after the grant draw on them (docs/gam-credits.md).
CREATE TABLE gam_grants (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  sku TEXT NOT NULL,
  credits_micros INTEGER NOT NULL,
  granted_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  receipt_id TEXT NOT NULL
);
CREATE INDEX gam_grants_key ON gam_grants (key_id, expires_at);

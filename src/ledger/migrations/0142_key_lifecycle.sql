-- Key lifecycle (issue 14): optional expiry, a throttled last-use time, and rotation.
-- A rotated key keeps its id (limits, role, ownership, usage) and gets a new secret;
-- the previous secret's hash keeps working until previous_expires_at (the grace period).
ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
ALTER TABLE api_keys ADD COLUMN previous_secret_hash TEXT;
ALTER TABLE api_keys ADD COLUMN previous_expires_at TEXT;
ALTER TABLE api_keys ADD COLUMN rotated_at TEXT;
CREATE UNIQUE INDEX api_keys_by_previous_secret ON api_keys (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL;

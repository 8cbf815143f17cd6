-- The PostgreSQL schema as the embedded file has it after migration 0310 (one
-- step instead of that side's 46): same tables, columns, keys and indexes
-- (test/schema-parity.test.ts compares them). INTEGER is BIGINT, BLOB is BYTEA;
-- SQLite's implicit rowid, which two reads order by, is an identity column
-- here. Text compares byte by byte (COLLATE "C", as SQLite's BINARY), so ids,
-- times and pages sort the same whatever the database's locale. Every later
-- step is a migration of the same number on both sides.
CREATE TABLE accounts (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
, deleted_at TEXT COLLATE "C");
CREATE TABLE account_logins (
  account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts (id),
  email TEXT COLLATE "C" NOT NULL UNIQUE,
  password_hash TEXT COLLATE "C" NOT NULL,
  dashboard_key_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE api_keys (
  id TEXT COLLATE "C" PRIMARY KEY,
  name TEXT COLLATE "C" NOT NULL,
  secret_hash TEXT COLLATE "C" NOT NULL UNIQUE,
  prefix TEXT COLLATE "C" NOT NULL,
  hop_limit BIGINT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  revoked_at TEXT COLLATE "C"
, surface TEXT COLLATE "C", role TEXT COLLATE "C" NOT NULL DEFAULT 'operator' CHECK (role IN ('agent', 'operator')), account_id TEXT COLLATE "C" REFERENCES accounts (id), expires_at TEXT COLLATE "C", last_used_at TEXT COLLATE "C", previous_secret_hash TEXT COLLATE "C", previous_expires_at TEXT COLLATE "C", rotated_at TEXT COLLATE "C", hop_period TEXT COLLATE "C" NOT NULL DEFAULT 'month' CHECK (hop_period IN ('day', 'week', 'month', 'none')));
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);
CREATE UNIQUE INDEX api_keys_by_previous_secret ON api_keys (previous_secret_hash) WHERE previous_secret_hash IS NOT NULL;
CREATE TABLE astl_entities (
  entity TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  version BIGINT NOT NULL,
  manifest_id TEXT COLLATE "C" NOT NULL
);
CREATE TABLE astl_manifests (
  id TEXT COLLATE "C" PRIMARY KEY,
  log_index BIGINT NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  prev_id TEXT COLLATE "C"
);
CREATE TABLE clear_counters (
  month TEXT COLLATE "C" NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  decision TEXT COLLATE "C" NOT NULL,
  acts BIGINT NOT NULL,
  usd BIGINT NOT NULL,
  micros BIGINT NOT NULL,
  PRIMARY KEY (month, key_id, decision)
);
CREATE TABLE clearing_checkpoints (
  id TEXT COLLATE "C" PRIMARY KEY,
  log_index BIGINT NOT NULL,
  receipts_from BIGINT NOT NULL,
  receipts_to BIGINT NOT NULL,
  period_start TEXT COLLATE "C" NOT NULL,
  period_end TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE commitment_openings (
  receipt_id TEXT COLLATE "C" NOT NULL,
  field TEXT COLLATE "C" NOT NULL,
  account_id TEXT COLLATE "C" NOT NULL,
  commitment TEXT COLLATE "C" NOT NULL,
  salt TEXT COLLATE "C" NOT NULL,
  value TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (receipt_id, field)
);
CREATE TABLE conformity_packs (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  category_id TEXT COLLATE "C" NOT NULL,
  pack_hash TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
, pack TEXT COLLATE "C" NOT NULL DEFAULT '');
CREATE TABLE depository_assets (
  key_id TEXT COLLATE "C" NOT NULL,
  asset_id TEXT COLLATE "C" NOT NULL,
  custody_units BIGINT NOT NULL,
  token_supply BIGINT NOT NULL,
  custodian TEXT COLLATE "C",
  seq BIGINT NOT NULL,
  chain_hash TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (key_id, asset_id)
);
CREATE TABLE depository_events (
  key_id TEXT COLLATE "C" NOT NULL,
  asset_id TEXT COLLATE "C" NOT NULL,
  seq BIGINT NOT NULL,
  event_type TEXT COLLATE "C" NOT NULL,
  chain_hash TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (key_id, asset_id, seq)
);
CREATE TABLE foundry_runs (
  rowid BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  tenant_id TEXT COLLATE "C" NOT NULL,
  report TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX foundry_runs_by_tenant ON foundry_runs (key_id, tenant_id);
CREATE TABLE fuses (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL CHECK (state IN ('LIVE', 'ARMED', 'DEAD', 'UNSIGNED')),
  label TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX fuses_by_key ON fuses (key_id);
CREATE TABLE gam_grants (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  sku TEXT COLLATE "C" NOT NULL,
  credits_micros BIGINT NOT NULL,
  granted_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL
);
CREATE INDEX gam_grants_key ON gam_grants (key_id, expires_at);
CREATE TABLE health_probe (
  id BIGINT PRIMARY KEY CHECK (id = 1),
  probed_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE hop_counters (key_id TEXT COLLATE "C" NOT NULL, day TEXT COLLATE "C" NOT NULL, hops BIGINT NOT NULL, PRIMARY KEY (key_id, day));
CREATE TABLE idempotency (
  key_id TEXT COLLATE "C" NOT NULL,
  idem_key TEXT COLLATE "C" NOT NULL,
  request_hash TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL,
  status BIGINT,
  headers TEXT COLLATE "C",
  body TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (key_id, idem_key)
);
CREATE TABLE inference_leaves (
  session_id TEXT COLLATE "C" NOT NULL,
  idx BIGINT NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  leaf_hash TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (session_id, idx)
);
CREATE INDEX inference_leaves_by_key ON inference_leaves (key_id, session_id);
CREATE TABLE issuer_listings (
  vendor TEXT COLLATE "C" NOT NULL,
  account_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  url TEXT COLLATE "C",
  listed_at TEXT COLLATE "C" NOT NULL,
  listed_until TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (vendor, listed_at)
);
CREATE INDEX issuer_listings_until ON issuer_listings (vendor, listed_until);
CREATE TABLE key_receipts (key_id TEXT COLLATE "C" NOT NULL, day TEXT COLLATE "C" NOT NULL, first BIGINT NOT NULL, offsets BYTEA NOT NULL, PRIMARY KEY (key_id, first));
CREATE INDEX key_receipts_by_day ON key_receipts (day, key_id);
CREATE TABLE log_segments (
       log TEXT COLLATE "C" NOT NULL, start BIGINT NOT NULL, count BIGINT NOT NULL,
       entries BYTEA NOT NULL, summary TEXT COLLATE "C", created_at TEXT COLLATE "C" NOT NULL,
       PRIMARY KEY (log, start));
CREATE TABLE log_tile_hashes (
       log TEXT COLLATE "C" NOT NULL, level BIGINT NOT NULL, idx BIGINT NOT NULL, hash BYTEA NOT NULL,
       PRIMARY KEY (log, level, idx));
CREATE TABLE logs (
  name TEXT COLLATE "C" PRIMARY KEY,
  size BIGINT NOT NULL DEFAULT 0,
  created_at TEXT COLLATE "C" NOT NULL
, edge BYTEA);
CREATE TABLE meter_archive (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  sku TEXT COLLATE "C" NOT NULL,
  amount_micros BIGINT NOT NULL,
  nap BIGINT NOT NULL DEFAULT 0,
  ref TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX meter_by_key ON meter_archive (key_id, sku);
CREATE INDEX meter_by_time ON meter_archive (created_at);
CREATE TABLE operator_checkouts (
  key_id TEXT COLLATE "C" NOT NULL,
  month TEXT COLLATE "C" NOT NULL,
  floor_micros BIGINT NOT NULL,
  bps_micros BIGINT NOT NULL,
  per_hop_micros BIGINT NOT NULL,
  basis TEXT COLLATE "C" NOT NULL,
  due_micros BIGINT NOT NULL,
  charged_micros BIGINT NOT NULL,
  amount_micros BIGINT NOT NULL,
  hops BIGINT NOT NULL,
  exposure_micros BIGINT NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL, clear_bps_micros BIGINT NOT NULL DEFAULT 0, clear_tier TEXT COLLATE "C",
  PRIMARY KEY (key_id, month)
);
CREATE TABLE oracle_aggregates (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  metric TEXT COLLATE "C" NOT NULL,
  status TEXT COLLATE "C" NOT NULL,
  value TEXT COLLATE "C",
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE orn_events (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('ga_declare', 'sharp')),
  graph_id TEXT COLLATE "C",
  amount_micros BIGINT NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE pas_authority_grants (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C",
  lines TEXT COLLATE "C" NOT NULL,
  states TEXT COLLATE "C" NOT NULL,
  max_premium_micros BIGINT NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  revoked_at TEXT COLLATE "C"
);
CREATE INDEX pas_authority_grants_by_key ON pas_authority_grants (key_id);
CREATE TABLE pas_exclusion_nodes (
  tree BIGINT NOT NULL,
  depth BIGINT NOT NULL,
  prefix BYTEA NOT NULL,
  hash BYTEA NOT NULL,
  leaf BYTEA,
  PRIMARY KEY (tree, depth, prefix)
);
CREATE TABLE pas_exclusion_trees (
  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL UNIQUE,
  size BIGINT NOT NULL,
  root BYTEA NOT NULL
);
CREATE TABLE pas_issues (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  job_id TEXT COLLATE "C" NOT NULL,
  license_id TEXT COLLATE "C" NOT NULL,
  fuse_id TEXT COLLATE "C" NOT NULL,
  reason TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE pas_job_receipt_lists (
    key_id TEXT COLLATE "C" NOT NULL, job_id TEXT COLLATE "C" NOT NULL, first BIGINT NOT NULL, offsets BYTEA NOT NULL,
    PRIMARY KEY (key_id, job_id, first));
CREATE TABLE pas_license_events (
  seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  license_id TEXT COLLATE "C" NOT NULL,
  from_state TEXT COLLATE "C" NOT NULL,
  to_state TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX pas_license_events_by_license ON pas_license_events (key_id, license_id, seq);
CREATE TABLE pas_licenses (
  key_id TEXT COLLATE "C" NOT NULL,
  license_id TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL CHECK (state IN ('LIVE', 'DEAD')),
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (key_id, license_id)
);
CREATE TABLE pas_spend_leaves (
  seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  job_id TEXT COLLATE "C" NOT NULL,
  ticket_id TEXT COLLATE "C" NOT NULL,
  spend_fingerprint TEXT COLLATE "C" NOT NULL,
  redeemed_at TEXT COLLATE "C" NOT NULL,
  UNIQUE (key_id, job_id)
);
CREATE INDEX pas_spend_leaves_by_key ON pas_spend_leaves (key_id, seq);
CREATE TABLE pas_tickets (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  license_id TEXT COLLATE "C" NOT NULL,
  job_id TEXT COLLATE "C" NOT NULL,
  fuse_id TEXT COLLATE "C" NOT NULL,
  spend_fingerprint TEXT COLLATE "C" NOT NULL,
  issued_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL,
  redeemed_at TEXT COLLATE "C",
  redeem_receipt_id TEXT COLLATE "C"
);
CREATE INDEX pas_tickets_by_license ON pas_tickets (key_id, license_id, redeemed_at, expires_at);
CREATE TABLE passkeys (
  credential_id TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  public_key TEXT COLLATE "C" NOT NULL,
  counter BIGINT NOT NULL,
  transports TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  last_used_at TEXT COLLATE "C"
, name TEXT COLLATE "C");
CREATE INDEX passkeys_by_account ON passkeys (account_id);
CREATE TABLE password_resets (
  token_hash TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  expires_at TEXT COLLATE "C" NOT NULL,
  used_at TEXT COLLATE "C"
);
CREATE TABLE pdtr_bindings (
  payment_hash TEXT COLLATE "C" PRIMARY KEY,
  action_ref TEXT COLLATE "C" NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE prefinality_receipt_uses (
  jti TEXT COLLATE "C" PRIMARY KEY,
  order_hash TEXT COLLATE "C" NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE rate_windows (
  bucket TEXT COLLATE "C" NOT NULL,
  window_start BIGINT NOT NULL,
  count BIGINT NOT NULL,
  PRIMARY KEY (bucket, window_start)
);
CREATE INDEX rate_windows_by_start ON rate_windows (window_start);
CREATE TABLE receipt_ids_legacy (id TEXT COLLATE "C" PRIMARY KEY, log_index BIGINT NOT NULL);
CREATE TABLE receipt_seals (
  tree_size BIGINT PRIMARY KEY,
  root BYTEA NOT NULL,
  note TEXT COLLATE "C" NOT NULL,
  jws TEXT COLLATE "C" NOT NULL,
  kid TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE relay_clicks (
  partner_id TEXT COLLATE "C" NOT NULL,
  target TEXT COLLATE "C" NOT NULL,
  clicks BIGINT NOT NULL,
  last_click_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (partner_id, target)
);
CREATE TABLE relay_partners (
  partner_id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE rr1_receipt_uses (
  receipt_id TEXT COLLATE "C" PRIMARY KEY,
  act TEXT COLLATE "C" NOT NULL,
  used_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE sessions (
  secret_hash TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  created_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL
, user_agent TEXT COLLATE "C");
CREATE INDEX sessions_by_account ON sessions (account_id);
CREATE TABLE signal_mandates (
  id TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL,
  metric TEXT COLLATE "C" NOT NULL,
  overage BIGINT NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX signal_mandates_account ON signal_mandates (account_id, created_at);
CREATE TABLE spoliation_seals (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  matter_ref TEXT COLLATE "C" NOT NULL,
  evidence_count BIGINT NOT NULL,
  root_hash TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE triggers (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  template_id TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL,
  obligation TEXT COLLATE "C" NOT NULL,
  threshold TEXT COLLATE "C" NOT NULL,
  enabled_exposure_micros BIGINT NOT NULL,
  published_at TEXT COLLATE "C" NOT NULL,
  fired_at TEXT COLLATE "C",
  fire TEXT COLLATE "C",
  fee_micros BIGINT
);
CREATE INDEX triggers_fired_by_key ON triggers (key_id, fired_at) WHERE state = 'FIRED';
CREATE INDEX triggers_recent_fires ON triggers (fired_at) WHERE state = 'FIRED';
CREATE TABLE usage_counters (
       key_id TEXT COLLATE "C" NOT NULL, day TEXT COLLATE "C" NOT NULL, sku TEXT COLLATE "C" NOT NULL, nap BIGINT NOT NULL,
       count BIGINT NOT NULL, usd BIGINT NOT NULL, micros BIGINT NOT NULL,
       PRIMARY KEY (key_id, day, sku));
CREATE TABLE webauthn_challenges (
  challenge TEXT COLLATE "C" PRIMARY KEY,
  kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('register', 'signin')),
  account_id TEXT COLLATE "C",
  expires_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE webhook_attempts (
  delivery_id TEXT COLLATE "C" NOT NULL,
  n BIGINT NOT NULL,
  at TEXT COLLATE "C" NOT NULL,
  status BIGINT,
  error TEXT COLLATE "C",
  duration_ms BIGINT NOT NULL,
  PRIMARY KEY (delivery_id, n)
);
CREATE TABLE webhook_deliveries (
  rowid BIGINT GENERATED ALWAYS AS IDENTITY,
  id TEXT COLLATE "C" PRIMARY KEY,
  subscription_id TEXT COLLATE "C" NOT NULL,
  event_id TEXT COLLATE "C" NOT NULL,
  event_type TEXT COLLATE "C" NOT NULL,
  body TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL,
  attempts BIGINT NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  last_status BIGINT,
  last_error TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  delivered_at TEXT COLLATE "C"
);
CREATE INDEX webhook_due ON webhook_deliveries (state, next_attempt_at);
CREATE TABLE webhook_subscriptions (
  id TEXT COLLATE "C" PRIMARY KEY,
  key_id TEXT COLLATE "C" NOT NULL,
  url TEXT COLLATE "C" NOT NULL,
  trigger_id TEXT COLLATE "C",
  template_id TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  disabled_at TEXT COLLATE "C"
, consecutive_failures BIGINT NOT NULL DEFAULT 0, disabled_reason TEXT COLLATE "C", events TEXT COLLATE "C" NOT NULL DEFAULT 'trigger', fuse_id TEXT COLLATE "C");
CREATE INDEX webhook_subs_by_key ON webhook_subscriptions (key_id);
CREATE TABLE witness_cosignatures (
  log TEXT COLLATE "C" NOT NULL,
  tree_size BIGINT NOT NULL,
  vkey TEXT COLLATE "C" NOT NULL,
  line TEXT COLLATE "C" NOT NULL,
  cosigned_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (log, tree_size, vkey)
);
CREATE TABLE witness_state (
  log TEXT COLLATE "C" NOT NULL,
  vkey TEXT COLLATE "C" NOT NULL,
  name TEXT COLLATE "C" NOT NULL,
  known_size BIGINT NOT NULL DEFAULT 0,
  cosigned_size BIGINT,
  cosigned_at TEXT COLLATE "C",
  last_error TEXT COLLATE "C",
  error_at TEXT COLLATE "C",
  failures BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (log, vkey)
);
CREATE TABLE x402_payments (
  payment_id TEXT COLLATE "C" PRIMARY KEY,
  state TEXT COLLATE "C" NOT NULL CHECK (state IN ('settling', 'settled', 'failed')),
  resource TEXT COLLATE "C" NOT NULL,
  request_hash TEXT COLLATE "C" NOT NULL,
  network TEXT COLLATE "C" NOT NULL,
  asset TEXT COLLATE "C" NOT NULL,
  amount TEXT COLLATE "C" NOT NULL,
  payer TEXT COLLATE "C" NOT NULL,
  pay_to TEXT COLLATE "C" NOT NULL,
  x402_version BIGINT NOT NULL,
  payment_payload TEXT COLLATE "C" NOT NULL,
  requirements TEXT COLLATE "C" NOT NULL,
  pending_receipt TEXT COLLATE "C" NOT NULL,
  receipt_id TEXT COLLATE "C",
  transaction_hash TEXT COLLATE "C",
  error TEXT COLLATE "C",
  created_at TEXT COLLATE "C" NOT NULL,
  updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX x402_payments_state ON x402_payments (state, created_at);
-- The rows the embedded steps seed: the four public logs, the public demos' drill data.
INSERT INTO logs (name, size, created_at) VALUES
  ('receipts', 0, '1970-01-01T00:00:00.000Z'),
  ('astl', 0, '1970-01-01T00:00:00.000Z'),
  ('triggers', 0, '1970-01-01T00:00:00.000Z'),
  ('clearing', 0, '1970-01-01T00:00:00.000Z');
INSERT INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES
  ('fuse_drill_live', '', 'LIVE', 'public drill fuse (LIVE)', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z'),
  ('fuse_drill_dead', '', 'DEAD', 'public drill fuse (DEAD)', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z');
INSERT INTO pas_licenses (key_id, license_id, state, created_at, updated_at) VALUES
  ('', 'lic_drill_live', 'LIVE', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z'),
  ('', 'lic_drill_dead', 'DEAD', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z');
INSERT INTO pas_authority_grants (id, key_id, name, lines, states, max_premium_micros, created_at) VALUES
  ('auth_drill', '', 'public drill grant', '["cyber","e_and_o","general_liability"]', '["CA","NY","TX"]', 250000000000, '1970-01-01T00:00:00.000Z');

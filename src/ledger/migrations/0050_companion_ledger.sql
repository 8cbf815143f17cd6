-- Companion ledger (issue 8): ASTL manifests, triggers, oracle aggregates,
-- webhook subscriptions and deliveries, clearing checkpoints. Every row that
-- a public log records also has its leaf in `log_entries` (logs astl,
-- triggers, clearing); these tables index them and hold the private parts.

-- One row per published surface manifest; a republish is a new version, never an update.
CREATE TABLE astl_manifests (
  id TEXT PRIMARY KEY,
  entity TEXT NOT NULL,
  version INTEGER NOT NULL,
  key_id TEXT NOT NULL,
  act_kinds TEXT NOT NULL,
  log_index INTEGER NOT NULL,
  leaf_hash TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (entity, version)
);
CREATE INDEX astl_by_leaf ON astl_manifests (leaf_hash);

-- Published triggers: ARMED until fired once, then FIRED.
CREATE TABLE triggers (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  template_id TEXT NOT NULL,
  state TEXT NOT NULL,
  obligation TEXT NOT NULL,
  threshold TEXT NOT NULL,
  enabled_exposure_micros INTEGER NOT NULL,
  published_at TEXT NOT NULL,
  fired_at TEXT,
  fire TEXT,
  fee_micros INTEGER
);
CREATE INDEX triggers_by_key ON triggers (key_id, fired_at);

-- Sealed oracle aggregates (the result is also a receipt).
CREATE TABLE oracle_aggregates (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  metric TEXT NOT NULL,
  status TEXT NOT NULL,
  value TEXT,
  result TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Webhook subscribers of the trigger rail: one trigger, one template, or (both NULL) every trigger of the key.
CREATE TABLE webhook_subscriptions (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  url TEXT NOT NULL,
  trigger_id TEXT,
  template_id TEXT,
  created_at TEXT NOT NULL,
  disabled_at TEXT
);
CREATE INDEX webhook_subs_by_key ON webhook_subscriptions (key_id);

-- One row per (event, subscriber), written in the transaction of the event: never lost.
CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  subscription_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at TEXT NOT NULL,
  delivered_at TEXT
);
CREATE INDEX webhook_due ON webhook_deliveries (state, next_attempt_at);

CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL,
  n INTEGER NOT NULL,
  at TEXT NOT NULL,
  status INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  PRIMARY KEY (delivery_id, n)
);

-- Clearing checkpoints: each covers the receipts log from the previous one's end to its own.
CREATE TABLE clearing_checkpoints (
  id TEXT PRIMARY KEY,
  log_index INTEGER NOT NULL,
  receipts_from INTEGER NOT NULL,
  receipts_to INTEGER NOT NULL,
  period_start TEXT NOT NULL,
  period_end TEXT NOT NULL,
  created_at TEXT NOT NULL
);

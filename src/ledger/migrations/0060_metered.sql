-- Companion metered APIs (issue 9): Clear acts, NAP seals, PDTR bindings, ORN
-- declarations, relay partners and clicks. Money is integer micro-USD.

-- Every execute-gate act (agents and bind_gate verticals), refusals included.
-- exposure_micros counts toward cleared exposure only when decision = 'PERMIT'.
CREATE TABLE clear_acts (
  receipt_id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  vertical TEXT NOT NULL,
  fuse_id TEXT NOT NULL,
  decision TEXT NOT NULL,
  exposure_micros INTEGER NOT NULL DEFAULT 0,
  month TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX clear_acts_by_key_month ON clear_acts (key_id, month);
CREATE INDEX clear_acts_by_month ON clear_acts (month);

-- Spoliation seals: the Merkle root of a set of evidence hashes.
CREATE TABLE spoliation_seals (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  matter_ref TEXT NOT NULL,
  evidence_count INTEGER NOT NULL,
  root_hash TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- PDTR: one binding per x402 payment hash, ever (the primary key makes it exactly-once).
CREATE TABLE pdtr_bindings (
  payment_hash TEXT PRIMARY KEY,
  action_ref TEXT NOT NULL,
  key_id TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- ORN General Average declarations and SHARP slices.
CREATE TABLE orn_events (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('ga_declare', 'sharp')),
  graph_id TEXT,
  amount_micros INTEGER NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Relay partners (enrolled by a key) and their track-link clicks.
CREATE TABLE relay_partners (
  partner_id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  name TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE relay_clicks (
  partner_id TEXT NOT NULL,
  target TEXT NOT NULL,
  clicks INTEGER NOT NULL,
  last_click_at TEXT NOT NULL,
  PRIMARY KEY (partner_id, target)
);

-- Policy administration (SPEC 2.3, 3): licence parents, bind tickets, redeemed
-- spend leaves, manual-underwriting issues, delegated-authority grants, and the
-- receipts of each job (for the examiner appendix). Everything is owned by one
-- API key; owner '' is the public drill data of the demos.

-- Licence parents are create-free: an id never charged has NO row and reads
-- UNSIGNED. A row exists from the first charge on; `dead` stores DEAD (the
-- blown state). ARMED is never stored: it is LIVE with unredeemed children.
CREATE TABLE pas_licenses (
  key_id TEXT NOT NULL,
  license_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('LIVE', 'DEAD')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (key_id, license_id)
);

-- The state history of a parent: one row per transition (charge or dead).
CREATE TABLE pas_license_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  key_id TEXT NOT NULL,
  license_id TEXT NOT NULL,
  from_state TEXT NOT NULL,
  to_state TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  at TEXT NOT NULL
);
CREATE INDEX pas_license_events_by_license ON pas_license_events (key_id, license_id, seq);

-- Bind tickets: children of one parent, bound to one spend fingerprint, single use.
-- redeemed_at NULL = issued; set = consumed (claimed by a conditional UPDATE).
CREATE TABLE pas_tickets (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  license_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  fuse_id TEXT NOT NULL,
  spend_fingerprint TEXT NOT NULL,
  issued_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  redeemed_at TEXT,
  redeem_receipt_id TEXT
);
CREATE INDEX pas_tickets_by_license ON pas_tickets (key_id, license_id, redeemed_at, expires_at);

-- Redeemed spend leaves: at most one per (key, job). The sorted Merkle tree of
-- exclusion proofs is built over a key's job ids; seq identifies a snapshot.
CREATE TABLE pas_spend_leaves (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  key_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  ticket_id TEXT NOT NULL,
  spend_fingerprint TEXT NOT NULL,
  redeemed_at TEXT NOT NULL,
  UNIQUE (key_id, job_id)
);
CREATE INDEX pas_spend_leaves_by_key ON pas_spend_leaves (key_id, seq);

-- Manual-underwriting issues raised by PAS-A pre-bind instead of a ticket.
CREATE TABLE pas_issues (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  license_id TEXT NOT NULL,
  fuse_id TEXT NOT NULL,
  reason TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

-- Delegated-authority grants (MGA): per API key, managed with the CLI.
-- lines and states are JSON arrays; max_premium_micros is integer micro-USD.
CREATE TABLE pas_authority_grants (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  name TEXT,
  lines TEXT NOT NULL,
  states TEXT NOT NULL,
  max_premium_micros INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
);
CREATE INDEX pas_authority_grants_by_key ON pas_authority_grants (key_id);

-- Receipts of a job (bind checks, pre-binds, redeems, authority checks): the examiner appendix.
CREATE TABLE pas_job_receipts (
  key_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  decision TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (key_id, job_id, receipt_id)
);

-- Drill data of the public demos (owner ''): one LIVE and one DEAD licence parent,
-- and one authority grant.
INSERT OR IGNORE INTO pas_licenses (key_id, license_id, state, created_at, updated_at) VALUES
  ('', 'lic_drill_live', 'LIVE', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z'),
  ('', 'lic_drill_dead', 'DEAD', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z');
INSERT OR IGNORE INTO pas_authority_grants (id, key_id, name, lines, states, max_premium_micros, created_at) VALUES
  ('auth_drill', '', 'public drill grant', '["cyber","e_and_o","general_liability"]', '["CA","NY","TX"]', 250000000000, '1970-01-01T00:00:00.000Z');

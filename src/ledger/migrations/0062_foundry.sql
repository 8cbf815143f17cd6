-- Foundry (issue 9, point 7): depository custody parity, conformity packs,
-- pipeline runs and inference-root sessions.

-- One tokenized twin per (key, asset): custody units backing it and its token
-- supply (parity: equal after every event), and the head of its event hash chain.
CREATE TABLE depository_assets (
  key_id TEXT NOT NULL,
  asset_id TEXT NOT NULL,
  custody_units INTEGER NOT NULL,
  token_supply INTEGER NOT NULL,
  custodian TEXT,
  seq INTEGER NOT NULL,
  chain_hash TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (key_id, asset_id)
);
CREATE TABLE depository_events (
  key_id TEXT NOT NULL,
  asset_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  chain_hash TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (key_id, asset_id, seq)
);

CREATE TABLE conformity_packs (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  category_id TEXT NOT NULL,
  pack_hash TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE foundry_runs (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  tenant_id TEXT NOT NULL,
  report TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX foundry_runs_by_tenant ON foundry_runs (key_id, tenant_id);

-- Inference-root sessions: each sealed exchange is a leaf of the session's Merkle tree.
CREATE TABLE inference_leaves (
  session_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  key_id TEXT NOT NULL,
  leaf_hash TEXT NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (session_id, idx)
)

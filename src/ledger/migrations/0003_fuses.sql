-- Fuses (SPEC 2.1, 3): owned by one API key; drill fuses (owner '') serve the public demos.
CREATE TABLE fuses (
  id TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('LIVE', 'ARMED', 'DEAD', 'UNSIGNED')),
  label TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX fuses_by_key ON fuses (key_id);

-- Append-only Merkle logs (receipts, astl, triggers, clearing...).
CREATE TABLE logs (
  name TEXT PRIMARY KEY,
  size INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL
);

-- The exact bytes of every leaf, by index.
CREATE TABLE log_entries (
  log TEXT NOT NULL,
  idx INTEGER NOT NULL,
  leaf BLOB NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (log, idx)
);

-- Every perfect subtree hash: level 0 are leaf hashes; (level, idx) covers
-- leaves [idx * 2^level, (idx + 1) * 2^level). Heads and proofs read O(log n) rows.
CREATE TABLE log_nodes (
  log TEXT NOT NULL,
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  hash BLOB NOT NULL,
  PRIMARY KEY (log, level, idx)
) WITHOUT ROWID;

INSERT INTO logs (name, size, created_at) VALUES
  ('receipts', 0, '1970-01-01T00:00:00.000Z'),
  ('astl', 0, '1970-01-01T00:00:00.000Z'),
  ('triggers', 0, '1970-01-01T00:00:00.000Z'),
  ('clearing', 0, '1970-01-01T00:00:00.000Z');

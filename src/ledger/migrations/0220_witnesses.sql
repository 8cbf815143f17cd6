-- Witnesses (issue 27, C2SP tlog-witness): per log and witness (keyed by its vkey, so renaming
-- a witness in the policy keeps its state), the size the witness holds (the `old` size of the
-- next add-checkpoint), the last size it cosigned and when, and the last error. Each cosignature
-- kept (verified against the witness's vkey before it is written) is one row per log, tree size
-- and witness: a checkpoint served at that size carries these lines after the log's signature.
CREATE TABLE witness_state (
  log TEXT NOT NULL,
  vkey TEXT NOT NULL,
  name TEXT NOT NULL,
  known_size INTEGER NOT NULL DEFAULT 0,
  cosigned_size INTEGER,
  cosigned_at TEXT,
  last_error TEXT,
  error_at TEXT,
  failures INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (log, vkey)
);
CREATE TABLE witness_cosignatures (
  log TEXT NOT NULL,
  tree_size INTEGER NOT NULL,
  vkey TEXT NOT NULL,
  line TEXT NOT NULL,
  cosigned_at TEXT NOT NULL,
  PRIMARY KEY (log, tree_size, vkey)
);

-- Every governed act's signed receipt (refusals included).
CREATE TABLE receipts (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  decision TEXT NOT NULL,
  subject TEXT,
  key_id TEXT,
  jws TEXT NOT NULL,
  payload TEXT NOT NULL,
  log_index INTEGER,
  created_at TEXT NOT NULL
);
CREATE INDEX receipts_by_subject ON receipts (subject);

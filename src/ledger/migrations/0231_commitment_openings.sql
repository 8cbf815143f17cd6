-- The openings of the commitments that replace caller free text in public receipts
-- (docs/public-log.md): private to the receipt's account, never in a log.
CREATE TABLE commitment_openings (
  receipt_id TEXT NOT NULL,
  field TEXT NOT NULL,
  account_id TEXT NOT NULL,
  commitment TEXT NOT NULL,
  salt TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (receipt_id, field)
);

-- Reviews (issue 47, docs/reviews.md): the question a HOLD puts to a person.
-- One row per held request; `request_key` (the requesting key, the operation
-- and the request's fingerprint) finds the review a retry of the same request
-- reuses. `summary` is what the reviewer is shown (private to the account);
-- the public log holds only receipts, with the reviewer and the note committed.
CREATE TABLE reviews (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  operation TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  request_key TEXT NOT NULL,
  hold_receipt_id TEXT NOT NULL,
  summary TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  opened_receipt_id TEXT,
  decided_at TEXT,
  decided_by TEXT,
  reviewer_commitment TEXT,
  note TEXT,
  decision_receipt_id TEXT,
  used_at TEXT,
  used_receipt_id TEXT
);
CREATE INDEX reviews_by_request ON reviews (request_key, created_at);
CREATE INDEX reviews_by_account ON reviews (account_id, state, created_at);
CREATE INDEX reviews_by_expiry ON reviews (state, expires_at);

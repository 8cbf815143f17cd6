-- Reviews (issue 47, docs/reviews.md): the question a HOLD puts to a person.
-- One row per held request; `request_key` (the requesting key, the operation
-- and the request's fingerprint) finds the review a retry of the same request
-- reuses. `summary` is what the reviewer is shown (private to the account);
-- the public log holds only receipts, with the reviewer and the note committed.
CREATE TABLE reviews (
  id TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  operation TEXT COLLATE "C" NOT NULL,
  fingerprint TEXT COLLATE "C" NOT NULL,
  request_key TEXT COLLATE "C" NOT NULL,
  hold_receipt_id TEXT COLLATE "C" NOT NULL,
  summary TEXT COLLATE "C" NOT NULL,
  state TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL,
  opened_receipt_id TEXT COLLATE "C",
  decided_at TEXT COLLATE "C",
  decided_by TEXT COLLATE "C",
  reviewer_commitment TEXT COLLATE "C",
  note TEXT COLLATE "C",
  decision_receipt_id TEXT COLLATE "C",
  used_at TEXT COLLATE "C",
  used_receipt_id TEXT COLLATE "C"
);
CREATE INDEX reviews_by_request ON reviews (request_key, created_at);
CREATE INDEX reviews_by_account ON reviews (account_id, state, created_at);
CREATE INDEX reviews_by_expiry ON reviews (state, expires_at);

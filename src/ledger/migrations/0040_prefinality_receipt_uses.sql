-- Pre-finality receipts consumed by the RTP gate: one receipt (jti) clears one
-- payment order (its fingerprint), ever. The primary key makes the claim
-- exactly-once under concurrency and across processes.
CREATE TABLE prefinality_receipt_uses (
  jti TEXT PRIMARY KEY,
  order_hash TEXT NOT NULL,
  key_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);

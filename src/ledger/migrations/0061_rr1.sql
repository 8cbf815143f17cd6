-- RR-1: receipts consumed by the demo protected endpoint. A receipt authorises
-- one act: the primary key makes the claim exactly-once, across processes.
CREATE TABLE rr1_receipt_uses (
  receipt_id TEXT PRIMARY KEY,
  act TEXT NOT NULL,
  used_at TEXT NOT NULL
)

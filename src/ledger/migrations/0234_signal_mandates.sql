-- Signal mandates (SPEC 2.4 stack step 5, "pattern feed, mandate overage"): an account's standing
-- watches of a pattern metric on the pattern feed; those past the platform's included count are
-- charged mandate_overage once each (docs/premium-acts.md).
CREATE TABLE signal_mandates (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  metric TEXT NOT NULL,
  overage INTEGER NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX signal_mandates_account ON signal_mandates (account_id, created_at);

-- Operator checkout (issue 15): hops per key and UTC month (the per-hop term of
-- the operator formula), and one checkout row per key and closed month: the
-- one production write. The primary key makes a second checkout impossible.
CREATE TABLE key_hops_monthly (
  key_id TEXT NOT NULL,
  month TEXT NOT NULL,
  hops INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (key_id, month)
);

CREATE TABLE operator_checkouts (
  key_id TEXT NOT NULL,
  month TEXT NOT NULL,
  floor_micros INTEGER NOT NULL,
  bps_micros INTEGER NOT NULL,
  per_hop_micros INTEGER NOT NULL,
  basis TEXT NOT NULL,
  due_micros INTEGER NOT NULL,
  charged_micros INTEGER NOT NULL,
  amount_micros INTEGER NOT NULL,
  hops INTEGER NOT NULL,
  exposure_micros INTEGER NOT NULL,
  receipt_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (key_id, month)
);

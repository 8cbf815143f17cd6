-- Clear acts as counters (issue 26): the month figures (acts by decision,
-- cleared exposure, keys) are all that was ever read of clear_acts, one row
-- per execute-gate answer and pre-finality GO, under a random primary key and
-- two indexes. A group of acts now adds to one row per (month, key, decision).
-- Exposure is kept as whole USD plus a micro remainder, as usage_counters'
-- amounts are, so that no sum passes SQLite's 64-bit integers.
CREATE TABLE clear_counters (
  month TEXT NOT NULL,
  key_id TEXT NOT NULL,
  decision TEXT NOT NULL,
  acts INTEGER NOT NULL,
  usd INTEGER NOT NULL,
  micros INTEGER NOT NULL,
  PRIMARY KEY (month, key_id, decision)
) WITHOUT ROWID;

INSERT INTO clear_counters (month, key_id, decision, acts, usd, micros)
SELECT month, key_id, decision, COUNT(*),
       SUM(exposure_micros / 1000000) + SUM(exposure_micros % 1000000) / 1000000,
       SUM(exposure_micros % 1000000) % 1000000
FROM clear_acts GROUP BY month, key_id, decision;

DROP TABLE clear_acts;

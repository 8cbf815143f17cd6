-- Fixed-window request counters for the public demo endpoints, shared by every
-- process on the database (so the limit holds across processes).
CREATE TABLE rate_windows (
  bucket TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

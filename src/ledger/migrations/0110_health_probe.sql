-- /health's write probe (issue 18): one row, rewritten by each probe, so that
-- "database: ok" means the service can write, not only read.
CREATE TABLE health_probe (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  probed_at TEXT NOT NULL
);

-- The request log (issue 49, docs/request-log.md): every keyed request's
-- method, path, status, problem code, key, time, latency and receipt, kept
-- REQUEST_LOG_RETENTION_DAYS. No body, query string or secret is stored.
-- `id` sorts by time (ids.ts, newSortableId): an account's page is a range of it.
CREATE TABLE request_log (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL,
  key_id TEXT NOT NULL,
  at TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status INTEGER NOT NULL,
  code TEXT,
  latency_us INTEGER NOT NULL,
  receipt_id TEXT,
  request_id TEXT NOT NULL
);
CREATE INDEX request_log_by_account ON request_log (account_id, id);
CREATE INDEX request_log_by_time ON request_log (at);

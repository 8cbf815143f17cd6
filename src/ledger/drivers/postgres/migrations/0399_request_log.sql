-- The request log (issue 49, docs/request-log.md): every keyed request's
-- method, path, status, problem code, key, time, latency and receipt, kept
-- REQUEST_LOG_RETENTION_DAYS. No body, query string or secret is stored.
-- `id` sorts by time (ids.ts, newSortableId): an account's page is a range of it.
CREATE TABLE request_log (
  id TEXT COLLATE "C" PRIMARY KEY,
  account_id TEXT COLLATE "C" NOT NULL,
  key_id TEXT COLLATE "C" NOT NULL,
  at TEXT COLLATE "C" NOT NULL,
  method TEXT COLLATE "C" NOT NULL,
  path TEXT COLLATE "C" NOT NULL,
  status BIGINT NOT NULL,
  code TEXT COLLATE "C",
  latency_us BIGINT NOT NULL,
  receipt_id TEXT COLLATE "C",
  request_id TEXT COLLATE "C" NOT NULL
);
CREATE INDEX request_log_by_account ON request_log (account_id, id);
CREATE INDEX request_log_by_time ON request_log (at);

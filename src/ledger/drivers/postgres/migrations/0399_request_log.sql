-- The request log (issue 49, docs/request-log.md): every keyed request's
-- method, path, status, problem code, key, latency and receipt, kept
-- REQUEST_LOG_RETENTION_DAYS. No body, query string or secret is stored.
-- One row per account and write of a process (every REQUEST_LOG_FLUSH_MS),
-- its requests packed in `entries` (JSON), as the key's receipts are listed
-- (key_receipts): a busy account costs one row a second, not one per request.
-- `first` and `last` are the smallest and largest request ids of the row;
-- an id begins with its time (ids.ts, newSortableId), so a page newest first,
-- a time filter and the retention sweep are ranges of (account_id, last).
CREATE TABLE request_log (
  account_id TEXT COLLATE "C" NOT NULL,
  last TEXT COLLATE "C" NOT NULL,
  first TEXT COLLATE "C" NOT NULL,
  request_count BIGINT NOT NULL,
  entries TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (account_id, last)
);

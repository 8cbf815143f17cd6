-- Expired rate-limit windows of every bucket are deleted by window start (issue 18):
-- without this index that delete would scan the table.
CREATE INDEX rate_windows_by_start ON rate_windows (window_start);

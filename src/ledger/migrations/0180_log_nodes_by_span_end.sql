-- Log nodes keyed by where they end (issue 13, write path): a node covering leaves
-- [idx * 2^level, (idx + 1) * 2^level) is stored under span_end = (idx + 1) * 2^level.
-- Keyed by (log, level, idx), one append touched the right edge of every level: about
-- sixteen B-tree pages per group commit. Every node an append makes ends inside the
-- appended range, so keyed by (log, span_end, level) they all land at one right edge.
CREATE TABLE log_nodes_by_span_end (
  log TEXT NOT NULL,
  span_end INTEGER NOT NULL,
  level INTEGER NOT NULL,
  hash BLOB NOT NULL,
  PRIMARY KEY (log, span_end, level)
) WITHOUT ROWID;

INSERT INTO log_nodes_by_span_end (log, span_end, level, hash)
  SELECT log, (idx + 1) << level, level, hash FROM log_nodes ORDER BY log, (idx + 1) << level, level;

DROP TABLE log_nodes;
ALTER TABLE log_nodes_by_span_end RENAME TO log_nodes;

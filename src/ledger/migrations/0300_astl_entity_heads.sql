-- An entity's versions were found through the UNIQUE (entity, version) index of
-- astl_manifests, which holds every version ever published: under republishes
-- its pages grow with history, and a group of publishes dirtied one page per
-- entity, written again at every group commit (measured under load: 17 of a
-- group commit's 49 WAL pages, and rising with the run's length). An entity's
-- head is now its own row, and each manifest names the version before it, so
-- versions are read newest first as a chain. A manifest row keeps only what
-- its leaf in the log does not say: its log index, its receipt and that link.
-- Entity, version, kinds and time are the leaf's; its leaf hash is the leaf's hash.
CREATE TABLE astl_entities (
  entity TEXT PRIMARY KEY,
  key_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  manifest_id TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO astl_entities (entity, key_id, version, manifest_id)
  SELECT entity, key_id, version, id FROM astl_manifests m
  WHERE version = (SELECT MAX(version) FROM astl_manifests WHERE entity = m.entity);
CREATE TABLE astl_manifests_chained (
  id TEXT PRIMARY KEY,
  log_index INTEGER NOT NULL,
  receipt_id TEXT NOT NULL,
  prev_id TEXT
) WITHOUT ROWID;
INSERT INTO astl_manifests_chained (id, log_index, receipt_id, prev_id)
  SELECT id, log_index, receipt_id, LAG(id) OVER (PARTITION BY entity ORDER BY version) FROM astl_manifests;
DROP TABLE astl_manifests;
ALTER TABLE astl_manifests_chained RENAME TO astl_manifests;

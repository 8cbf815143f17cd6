-- A key's declared act surface for the closed-world act (JSON array of act kinds);
-- NULL means the default: every surface preset of the absence catalog.
ALTER TABLE api_keys ADD COLUMN surface TEXT;

-- The drill fuses of the public demos (owner ''): one LIVE, one DEAD, so both outcomes can be seen.
INSERT OR IGNORE INTO fuses (id, key_id, state, label, created_at, updated_at) VALUES
  ('fuse_drill_live', '', 'LIVE', 'public drill fuse (LIVE)', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z'),
  ('fuse_drill_dead', '', 'DEAD', 'public drill fuse (DEAD)', '1970-01-01T00:00:00.000Z', '1970-01-01T00:00:00.000Z');

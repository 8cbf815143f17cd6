-- Key roles (issue 14): `agent` keys act and may blow a fuse; `operator` keys also
-- manage (and alone revive a fuse or licence). Every existing key was full-access,
-- so it stays an operator key.
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'operator' CHECK (role IN ('agent', 'operator'));

-- triggers_by_key (key_id, fired_at) served one query, the exposure a key's
-- triggers fired since a date, which reads FIRED triggers only. Every publish
-- still inserted an entry for its ARMED trigger (fired_at NULL): a third
-- B-tree per publish, about four WAL pages a group commit. The index now holds
-- fired triggers only, so an entry is written when a trigger fires.
DROP INDEX IF EXISTS triggers_by_key;
CREATE INDEX triggers_fired_by_key ON triggers (key_id, fired_at) WHERE state = 'FIRED';

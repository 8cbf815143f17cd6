-- Conformity packs are kept whole, so their owner can fetch one again and re-hash it.
ALTER TABLE conformity_packs ADD COLUMN pack TEXT NOT NULL DEFAULT '';
CREATE INDEX inference_leaves_by_key ON inference_leaves (key_id, session_id);
CREATE INDEX triggers_recent_fires ON triggers (fired_at) WHERE state = 'FIRED';

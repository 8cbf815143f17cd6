-- Conformity packs, depository twins, inference sessions, foundry runs and PDTR bindings
-- belong to the account (ownerId), as every other object does: their owner column (key_id)
-- held the acting key's id. Migration 0141 made each older key an account whose id is the
-- key's id, so only the rows of keys that joined another account (POST /v1/keys) move.
UPDATE conformity_packs SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = conformity_packs.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id);
UPDATE foundry_runs SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = foundry_runs.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id);
UPDATE inference_leaves SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = inference_leaves.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id);
UPDATE pdtr_bindings SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = pdtr_bindings.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id);
-- An asset id that two keys of one account both used cannot become one twin: the first of
-- them in the table moves, the other stays under its key's id (kept, no longer served).
UPDATE OR IGNORE depository_assets SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = depository_assets.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id);
-- A twin's chain links follow it: those of every twin that moved.
UPDATE OR IGNORE depository_events SET key_id = (SELECT k.account_id FROM api_keys k WHERE k.id = depository_events.key_id)
  WHERE key_id IN (SELECT id FROM api_keys WHERE account_id <> id)
    AND NOT EXISTS (SELECT 1 FROM depository_assets a WHERE a.key_id = depository_events.key_id AND a.asset_id = depository_events.asset_id);

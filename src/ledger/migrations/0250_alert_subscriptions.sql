-- Alerts (issue 31): a webhook subscription receives either the trigger rail's events
-- ('trigger', every subscription before this migration) or the alert events it chose,
-- space separated ('fuse.state_changed hop.denied'), and fuse_id narrows alerts to one fuse.
-- Deliveries, signing and retries are the same for both (src/api/site/webhooks.ts).
ALTER TABLE webhook_subscriptions ADD COLUMN events TEXT NOT NULL DEFAULT 'trigger';
ALTER TABLE webhook_subscriptions ADD COLUMN fuse_id TEXT;

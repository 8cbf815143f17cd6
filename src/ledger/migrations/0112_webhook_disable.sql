-- Webhook subscriptions that keep failing are disabled (issue 18, docs/hardening.md):
-- failed attempts in a row since the last success, and why a subscription was disabled.
ALTER TABLE webhook_subscriptions ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_subscriptions ADD COLUMN disabled_reason TEXT;

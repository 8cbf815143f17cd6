-- Per-key review expiry (docs/reviews.md): how long a review a HOLD of this key
-- opens waits for a person, in seconds (null: REVIEW_TTL_SECONDS). A mandate's
-- own review_expires_in_seconds still wins.
ALTER TABLE api_keys ADD COLUMN review_ttl_seconds BIGINT;

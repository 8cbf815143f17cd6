-- A key's reviews of a month, for its operator statement (docs/pricing.md):
-- found by the requesting key and the time, not by a scan of every review.
CREATE INDEX reviews_by_key ON reviews (key_id, created_at);

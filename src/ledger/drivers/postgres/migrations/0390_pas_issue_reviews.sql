-- The review that answers a manual-underwriting issue (docs/reviews.md): the
-- HOLD of a PAS-A pre-bind that raises the issue opens the review, and the
-- review's decision is the underwriter's answer. Null for an issue raised
-- before reviews, or by a caller with no account to ask.
ALTER TABLE pas_issues ADD COLUMN review_id TEXT COLLATE "C";

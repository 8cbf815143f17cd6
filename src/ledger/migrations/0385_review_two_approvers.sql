-- Two approvers above an amount (docs/reviews.md): how many approvals a review
-- needs (1, or 2 when REVIEW_TWO_APPROVERS_ABOVE_USD held it above that amount
-- as it opened), and the first of two approvals while the review waits for the
-- second (JSON: reviewer, its commitment, note, receipt and time).
ALTER TABLE reviews ADD COLUMN approvals_required INTEGER NOT NULL DEFAULT 1;
ALTER TABLE reviews ADD COLUMN first_approval TEXT;

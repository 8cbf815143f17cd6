-- A password, email or reset change voids every outstanding reset link of the
-- account (issue 45 item 10): the links are found by account.
CREATE INDEX password_resets_by_account ON password_resets (account_id);

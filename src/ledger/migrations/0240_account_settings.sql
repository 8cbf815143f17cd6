-- Account self-service (issue 31): sessions say which browser they are, so a
-- person can tell them apart and end one; passkeys have a name; a deleted
-- account keeps its row (its receipts in the public log still name its keys)
-- with the time it was deleted, and nothing that can sign in.
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
ALTER TABLE passkeys ADD COLUMN name TEXT;
ALTER TABLE accounts ADD COLUMN deleted_at TEXT;

-- The openings of a batch's commitments ride in the row that lists the key's
-- receipts of that batch (ledger/key-receipts.ts), not in a table of their own:
-- a table written by every batch rewrites its last page at every commit.
-- JSON: {"<log index>": [[field, salt, value], ...]}; NULL when none.
-- commitment_openings keeps the openings written before.
ALTER TABLE key_receipts ADD COLUMN openings TEXT;

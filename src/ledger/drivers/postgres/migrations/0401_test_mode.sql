-- Test mode (docs/test-mode.md): a key is live or test. A test key's acts are
-- decided as a live key's, but its receipts go to a log of their own,
-- `receipts-test`, and nothing of them is billed; the objects it makes belong
-- to its account's test side (ownerId in src/ledger/accounts.ts).
ALTER TABLE api_keys ADD COLUMN mode TEXT COLLATE "C" NOT NULL DEFAULT 'live' CHECK (mode IN ('live', 'test'));
INSERT INTO logs (name, size, created_at) VALUES ('receipts-test', 0, '1970-01-01T00:00:00.000Z');

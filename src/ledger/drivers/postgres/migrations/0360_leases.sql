-- Background jobs run once across the nodes of one database (issue 44 item 2):
-- each job runs only on the node holding its lease, which that node renews;
-- a lease not renewed by `expires_at` (ms since the epoch) may be taken by
-- another node (src/ledger/leases.ts).
CREATE TABLE leases (
  name TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  holder TEXT COLLATE "C" NOT NULL,
  expires_at BIGINT NOT NULL
);

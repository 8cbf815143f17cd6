-- Team accounts (issue 49, docs/accounts.md#team-accounts). A person is a login
-- (account_logins, keyed by the account the person signed up with: `person_id`
-- below); account_members says which accounts a person may act in, and with
-- which role: owner, operator or viewer. Every existing login is the owner of
-- its own account. An invitation is a single-use, expiring link for one email
-- and role; only the SHA-256 of its token is stored. A session acts in one of
-- its person's accounts at a time (`acting_account_id`; null: the person's own).
CREATE TABLE account_members (
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  person_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  role TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'operator', 'viewer')),
  created_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (account_id, person_id)
);
CREATE INDEX account_members_by_person ON account_members (person_id);
INSERT INTO account_members (account_id, person_id, role, created_at) SELECT account_id, account_id, 'owner', created_at FROM account_logins;
CREATE TABLE account_invitations (
  id TEXT COLLATE "C" PRIMARY KEY,
  token_hash TEXT COLLATE "C" NOT NULL,
  account_id TEXT COLLATE "C" NOT NULL REFERENCES accounts (id),
  email TEXT COLLATE "C" NOT NULL,
  role TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'operator', 'viewer')),
  invited_by TEXT COLLATE "C" NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL,
  expires_at TEXT COLLATE "C" NOT NULL,
  accepted_at TEXT COLLATE "C",
  accepted_by TEXT COLLATE "C",
  revoked_at TEXT COLLATE "C"
);
CREATE UNIQUE INDEX account_invitations_by_token ON account_invitations (token_hash);
CREATE INDEX account_invitations_by_account ON account_invitations (account_id, created_at);
ALTER TABLE sessions ADD COLUMN acting_account_id TEXT COLLATE "C";

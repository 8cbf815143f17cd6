-- The audit log (issue 49, docs/accounts.md#audit-log): what people did in the
-- dashboard (keys made and revoked, caps changed, fuses blown and charged,
-- members invited, removed and given another role, passwords changed...), who
-- did it and when. `id` begins with its time (ids.ts, newSortableId), so a page
-- newest first and a time filter are ranges of (account_id, id). `actor_email`
-- is the person's email at the time; `target` names the object (a key id, a
-- fuse id, an email); `detail` is JSON of non-secret facts (a new cap, a role).
-- No secret is ever written here.
CREATE TABLE audit_log (
  account_id TEXT COLLATE "C" NOT NULL,
  id TEXT COLLATE "C" NOT NULL,
  at TEXT COLLATE "C" NOT NULL,
  actor_id TEXT COLLATE "C" NOT NULL,
  actor_email TEXT COLLATE "C" NOT NULL,
  action TEXT COLLATE "C" NOT NULL,
  target TEXT COLLATE "C",
  detail TEXT COLLATE "C",
  PRIMARY KEY (account_id, id)
);

-- An audit entry's actor is a person or, since the API's changes are audited
-- too, a key: `actor_name` is the person's email or the key's name at the time
-- (api/audit.ts tells them apart by the actor's id), and the audit's `actor`
-- filter matches either.
ALTER TABLE audit_log RENAME COLUMN actor_email TO actor_name;
